const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

/**
 * A cron expression as people say it: `every day at 01:00 UTC`, `every hour at minute 5`, `every Monday to Friday
 * at 06:30 Europe/Berlin`, `on the 1st of every month at 00:00 UTC`. A time of day is followed by the zone it is
 * read in (a null zone: the process's own, as the reconciler reads it). Expressions of other shapes are quoted:
 * `on the cron schedule "0 9-17/2 * * 1-5" (UTC)`.
 *
 * @example cronInWords("0 1 * * *", "UTC") // "every day at 01:00 UTC"
 */
export function cronInWords(cron: string, timezone: string | null): string {
  const fields = cron.trim().split(/\s+/);
  const words = fields.length === 5 ? shapeOf(fields as [string, string, string, string, string]) : undefined;
  if (words === undefined) return `on the cron schedule "${cron}"${timezone ? ` (${timezone})` : ""}`;
  if (words.time === undefined) return words.text;
  return `${words.text} at ${words.time} ${timezone ?? "in the reconciler's time zone"}`;
}

/** The words of a cron expression, its time of day apart (the zone follows it). */
function shapeOf([minute, hour, dom, month, dow]: [string, string, string, string, string]): { text: string; time?: string } | undefined {
  const everyDay = dom === "*" && month === "*" && dow === "*";
  if (isNumber(minute) && isNumber(hour)) {
    const days = daysInWords(dom, month, dow);
    return days === undefined ? undefined : { text: days, time: `${pad(hour)}:${pad(minute)}` };
  }
  if (!everyDay) return undefined;
  if (minute === "*" && hour === "*") return { text: "every minute" };
  const step = /^\*\/(\d+)$/.exec(minute);
  if (step && hour === "*") return { text: `every ${step[1]} minutes` };
  if (isNumber(minute) && hour === "*") return { text: `every hour at minute ${Number(minute)}` };
  const hours = /^\*\/(\d+)$/.exec(hour);
  if (isNumber(minute) && hours) return { text: `every ${hours[1]} hours at minute ${Number(minute)}` };
  return undefined;
}

function daysInWords(dom: string, month: string, dow: string): string | undefined {
  if (month !== "*") return undefined;
  if (dom === "*" && dow === "*") return "every day";
  if (dom === "*") {
    const range = /^(\d)-(\d)$/.exec(dow);
    if (range && Number(range[1]) < Number(range[2]) && Number(range[2]) <= 7) {
      return `every ${WEEKDAYS[Number(range[1])]} to ${WEEKDAYS[Number(range[2])]}`;
    }
    const days = dow.split(",");
    if (!days.every((d) => /^[0-7]$/.test(d))) return undefined;
    return `every ${list(days.map((d) => WEEKDAYS[Number(d)]!))}`;
  }
  if (dow === "*" && isNumber(dom)) return `on the ${ordinal(Number(dom))} of every month`;
  return undefined;
}

function list(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? "") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)!}`;
}

function ordinal(n: number): string {
  const suffix = n % 10 === 1 && n !== 11 ? "st" : n % 10 === 2 && n !== 12 ? "nd" : n % 10 === 3 && n !== 13 ? "rd" : "th";
  return `${n}${suffix}`;
}

const isNumber = (field: string): boolean => /^\d{1,2}$/.test(field);
const pad = (field: string): string => field.padStart(2, "0");
