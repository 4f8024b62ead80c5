import "./prefetch";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import { refreshSession } from "./session";
import "./styles.css";

// Who is signed in, asked alongside the prefetched queries.
void refreshSession();

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
