// Trigger templates on their own, so a command that only shows triggers does not load the triggerer's checks.
export { renderTemplate, TEMPLATE_FIELDS } from "../render-template.js";
