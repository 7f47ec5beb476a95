import type { App } from './app-types';

/** Register every domain's job handlers and event sinks with the app. Routes live in http/routes.ts. */
export function registerDomains(app: App): void {
  void app;
}
