import { Link, Redirect, Route, Switch, useLocation } from "wouter";
import { decodeAssetKey } from "./asset-path";
import { ApiBanner, NotFound } from "./components/QueryStates";
import { AssetPage } from "./pages/Asset";
import { BackfillPage } from "./pages/Backfill";
import { BackfillsPage } from "./pages/Backfills";
import { CatalogPage } from "./pages/Catalog";
import { DefinitionErrorsPage } from "./pages/DefinitionErrors";
import { GraphPage } from "./pages/Graph";
import { PoolsPage } from "./pages/Pools";
import { RunPage } from "./pages/Run";
import { RunsPage } from "./pages/Runs";
import { TriggersPage } from "./pages/Triggers";

const NAV: readonly { href: string; label: string }[] = [
  { href: "/assets", label: "Assets" },
  { href: "/graph", label: "Graph" },
  { href: "/runs", label: "Runs" },
  { href: "/backfills", label: "Backfills" },
  { href: "/pools", label: "Pools" },
  { href: "/triggers", label: "Triggers" },
  { href: "/definitions", label: "Definitions" },
];

function Nav() {
  const [location] = useLocation();
  return (
    <nav className="nav">
      <Link href="/assets" className="brand">
        Tributary
      </Link>
      {NAV.map((n) => (
        <Link key={n.href} href={n.href} className={location === n.href || location.startsWith(`${n.href}/`) ? "active" : ""}>
          {n.label}
        </Link>
      ))}
    </nav>
  );
}

/** Every page has a shareable URL: the path names the object, the query string its filters. */
export function App() {
  return (
    <>
      <Nav />
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
          <Route path="/pools" component={PoolsPage} />
          <Route path="/triggers" component={TriggersPage} />
          <Route path="/definitions" component={DefinitionErrorsPage} />
          <Route>
            <NotFound what="Page" />
          </Route>
        </Switch>
      </main>
    </>
  );
}
