// The reconciler's settings parsers on their own, so reading settings (which every command does) does not load the
// reconciler's loops, storage and executors.
export { parseAlertsConfig, DEFAULT_ALERTS_CONFIG, ALERTS_CONFIG_ENV } from "../alerts/alerts-config.js";
export type { AlertsConfig, SinkConfig, WebhookSinkConfig, LogSinkConfig } from "../alerts/alerts-config.js";
export { parseOpenLineageConfig } from "../openlineage/openlineage-config.js";
export type { OpenLineageConfig } from "../openlineage/openlineage-config.js";
