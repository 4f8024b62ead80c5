import { useState } from "react";

/** A text filter applied on Enter or when it loses focus (not on every keystroke). */
export function TextFilter({
  label,
  placeholder,
  value,
  onCommit,
  testId,
  suggestions,
}: {
  label: string;
  placeholder: string;
  value: string | undefined;
  onCommit: (v: string) => void;
  testId: string;
  /** Values offered as the user types (a datalist); any other value may still be entered. */
  suggestions?: readonly string[];
}) {
  const [draft, setDraft] = useState(value ?? "");
  const [seen, setSeen] = useState(value);
  if (seen !== value) {
    setSeen(value);
    setDraft(value ?? "");
  }
  const commit = () => draft.trim() !== (value ?? "") && onCommit(draft.trim());
  return (
    <label>
      {label}{" "}
      <input
        data-testid={testId}
        placeholder={placeholder}
        value={draft}
        onChange={(e) => setDraft(e.target.value)}
        onBlur={commit}
        onKeyDown={(e) => e.key === "Enter" && commit()}
        {...(suggestions ? { list: `${testId}-suggestions` } : {})}
      />
      {suggestions ? (
        <datalist id={`${testId}-suggestions`}>
          {suggestions.map((s) => (
            <option key={s} value={s} />
          ))}
        </datalist>
      ) : null}
    </label>
  );
}
