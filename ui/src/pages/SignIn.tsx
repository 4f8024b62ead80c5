// The sign-in page, shown in place of any page while access control is on and nobody is signed in: a user name and
// password, and the single sign-on provider's button when one is configured. The URL stays the page wanted, so a
// sign-in lands there.
import { useState, type FormEvent } from "react";
import { signIn, type Session } from "../session";
import "./SignIn.css";

export function SignInPage({ session }: { session: Session }) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ message: string; code?: string } | undefined>(undefined);
  const wanted = `${window.location.pathname}${window.location.search}`;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(undefined);
    const result = await signIn(username.trim(), password);
    setBusy(false);
    if (!result.ok) {
      setPassword("");
      setError(result);
    }
  };

  const oidc = session.oidc;
  return (
    <div className="sign-in" data-testid="sign-in-page">
      <form className="card sign-in-card" onSubmit={(e) => void submit(e)} aria-label="Sign in">
        <h1>Sign in to Tributary</h1>
        <label>
          User name
          <input
            name="username"
            autoComplete="username"
            value={username}
            onChange={(e) => setUsername(e.target.value)}
            required
            autoFocus
            data-testid="sign-in-username"
          />
        </label>
        <label>
          Password
          <input
            name="password"
            type="password"
            autoComplete="current-password"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            required
            data-testid="sign-in-password"
          />
        </label>
        {error ? (
          <div className="error" role="alert" data-testid="sign-in-error">
            {error.message}
            {error.code ? <code className="code">{error.code}</code> : null}
          </div>
        ) : null}
        <button type="submit" className="primary" disabled={busy || !username.trim() || !password} data-testid="sign-in-submit">
          {busy ? "Signing in…" : "Sign in"}
        </button>
        {oidc.enabled && oidc.start ? (
          <>
            <div className="sign-in-or muted">or</div>
            <a className="button sign-in-oidc" href={`${oidc.start}?next=${encodeURIComponent(wanted)}`} data-testid="sign-in-oidc">
              Sign in with {oidc.label ?? "single sign-on"}
            </a>
          </>
        ) : null}
      </form>
    </div>
  );
}
