import { Link, Redirect, Route, Switch, useLocation } from "wouter";
import { decodeAssetKey } from "./asset-path";
import { ApiBanner, Loading, NotFound } from "./components/QueryStates";
import { AssetPage } from "./pages/Asset";
import { AuditPage } from "./pages/Audit";
import { BackfillPage } from "./pages/Backfill";
import { BackfillsPage } from "./pages/Backfills";
import { CatalogPage } from "./pages/Catalog";
import { DefinitionErrorsPage } from "./pages/DefinitionErrors";
import { ErasurePage } from "./pages/Erasure";
import { ErasuresPage } from "./pages/Erasures";
import { GraphPage } from "./pages/Graph";
import { PoolsPage } from "./pages/Pools";
import { RunPage } from "./pages/Run";
import { RunsPage } from "./pages/Runs";
import { SignInPage } from "./pages/SignIn";
import { TriggersPage } from "./pages/Triggers";
import { isAdmin, roleSummary, signOut, useSession, type Session } from "./session";

/** The pages in the header; `admin` ones only for an admin without a team (as `me.admin` says). */
const NAV: readonly { href: string; label: string; admin?: boolean }[] = [
  { href: "/assets", label: "Assets" },
  { href: "/graph", label: "Graph" },
  { href: "/runs", label: "Runs" },
  { href: "/backfills", label: "Backfills" },
  { href: "/erasures", label: "Erasures" },
  { href: "/pools", label: "Pools" },
  { href: "/triggers", label: "Triggers" },
  { href: "/definitions", label: "Definitions" },
  { href: "/audit", label: "Audit", admin: true },
];

function Nav({ session }: { session: Session | undefined }) {
  const [location] = useLocation();
  const signedIn = session?.caller ?? undefined;
  return (
    <nav className="nav">
      <Link href="/assets" className="brand">
        Tributary
      </Link>
      {session && (signedIn || !session.accessControl)
        ? NAV.filter((n) => !n.admin || isAdmin(session)).map((n) => (
            <Link key={n.href} href={n.href} className={location === n.href || location.startsWith(`${n.href}/`) ? "active" : ""}>
              {n.label}
            </Link>
          ))
        : null}
      {session ? <Caller session={session} /> : null}
    </nav>
  );
}

/** Who is signed in, and what they may do; "local" without access control. */
function Caller({ session }: { session: Session }) {
  const caller = session.caller;
  if (!session.accessControl) {
    return (
      <span className="nav-caller" data-testid="caller" title="Access control is off: every request may do everything">
        <span data-testid="caller-name">{caller?.name ?? "local"}</span>
      </span>
    );
  }
  if (!caller) return null;
  return (
    <span className="nav-caller" data-testid="caller">
      <span data-testid="caller-name">{caller.name}</span>
      <span className="nav-roles" data-testid="caller-roles">
        {roleSummary(caller.grants)}
      </span>
      <button type="button" className="nav-sign-out" onClick={() => void signOut()} data-testid="sign-out">
        Sign out
      </button>
    </span>
  );
}

/** Every page has a shareable URL: the path names the object, the query string its filters. */
export function App() {
  const state = useSession();
  const session = state.status === "ready" ? state.session : undefined;
  if (!session) {
    return (
      <>
        <Nav session={undefined} />
        <main className="main">
          <Loading />
        </main>
      </>
    );
  }
  if (session.accessControl && !session.caller) {
    return (
      <>
        <Nav session={session} />
        <ApiBanner />
        <main className="main">
          <SignInPage session={session} />
        </main>
      </>
    );
  }
  return (
    <>
      <Nav session={session} />
      <ApiBanner />
      <main className="main">
        <Switch>
          <Route path="/">
            <Redirect to="/assets" replace />
          </Route>
          <Route path="/assets" component={CatalogPage} />
          <Route path="/assets/*">{(params) => <AssetPage assetKey={decodeAssetKey(params["*"] ?? "")} />}</Route>
          <Route path="/graph" component={GraphPage} />
          <Route path="/runs" component={RunsPage} />
          <Route path="/runs/:id">{(params) => <RunPage runId={params.id} />}</Route>
          <Route path="/backfills" component={BackfillsPage} />
          <Route path="/backfills/:id">{(params) => <BackfillPage backfillId={params.id} />}</Route>
          <Route path="/erasures" component={ErasuresPage} />
          <Route path="/erasures/:id">{(params) => <ErasurePage erasureId={params.id} />}</Route>
          <Route path="/pools" component={PoolsPage} />
          <Route path="/triggers" component={TriggersPage} />
          <Route path="/definitions" component={DefinitionErrorsPage} />
          <Route path="/audit" component={AuditPage} />
          <Route>
            <NotFound what="Page" />
          </Route>
        </Switch>
      </main>
    </>
  );
}
