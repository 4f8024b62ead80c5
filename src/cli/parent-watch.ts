import { readFileSync } from "node:fs";

const CHECK_EVERY_MS = 1_000;

/**
 * Stops this process (as SIGTERM does: gracefully) once the process that
 * started it is gone. A supervisor killed with SIGKILL, or an `npx` wrapper
 * that ends without passing on its signal, would otherwise leave a server,
 * reconciler or worker running with nobody to stop it.
 */
export function stopWithParent(): void {
  const parent = currentParent() ?? process.ppid;
  // Started by init (a service manager, a container's entry point): there is no parent to outlive.
  if (parent <= 1) return;
  const timer = setInterval(() => {
    const now = currentParent();
    if (now === undefined ? isAlive(parent) : now === parent) return;
    clearInterval(timer);
    process.stderr.write(`the parent process ${parent} is gone: stopping\n`);
    process.kill(process.pid, "SIGTERM");
  }, CHECK_EVERY_MS);
  timer.unref();
}

/** The parent's pid as the kernel sees it now (Node's process.ppid keeps the one at start-up); undefined off Linux. */
function currentParent(): number | undefined {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    // "pid (command) state ppid …": the command may hold spaces and parentheses, so read after the last ")".
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
