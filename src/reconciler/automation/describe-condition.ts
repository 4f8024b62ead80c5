// Moved to the SDK (pure, and needed by the API as well, which may not import the reconciler).
export { describeCondition } from "../../sdk/index.js";
