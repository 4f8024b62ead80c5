// The browser-safety and request-limit settings (docs/security.md), as the environment gives them.
import { describe, expect, it } from "vitest";
import { resolveSettings } from "../../src/cli/settings.js";

const http = (env: NodeJS.ProcessEnv) => resolveSettings({}, env).http;

describe("HTTP settings", () => {
  it("defaults to no extra host names, no CORS, no proxy, 60 mutations a minute in bursts of 30", () => {
    expect(http({})).toEqual({
      publicHosts: [],
      corsOrigins: [],
      trustProxy: false,
      mutationRate: { perMinute: 60, burst: 30 },
      mutationRateSet: false,
    });
  });

  it("reads comma-separated host names and origins, in the form requests carry them", () => {
    const settings = http({
      TRIBUTARY_PUBLIC_HOSTS: " Tributary.Example.com, tributary-api:3000,[::1]:8080,10.0.0.5,",
      TRIBUTARY_CORS_ORIGINS: "https://App.example.com, http://localhost:5173/",
      TRIBUTARY_TRUST_PROXY: "true",
      TRIBUTARY_MUTATIONS_PER_MINUTE: "600",
      TRIBUTARY_MUTATION_BURST: "100",
    });
    expect(settings).toEqual({
      publicHosts: ["tributary.example.com", "tributary-api:3000", "[::1]:8080", "10.0.0.5"],
      corsOrigins: ["https://app.example.com", "http://localhost:5173"],
      trustProxy: true,
      mutationRate: { perMinute: 600, burst: 100 },
      mutationRateSet: true,
    });
    expect(http({ TRIBUTARY_MUTATIONS_PER_MINUTE: "0" }).mutationRate).toBeNull();
  });

  it("refuses what is not a host name, an origin or a count, naming the variable and the item", () => {
    const refused: [NodeJS.ProcessEnv, string][] = [
      [
        { TRIBUTARY_PUBLIC_HOSTS: "tributary.example/ui" },
        'environment variable TRIBUTARY_PUBLIC_HOSTS: "tributary.example/ui" is not a host name',
      ],
      [{ TRIBUTARY_PUBLIC_HOSTS: "a.example,b.example:99999" }, '"b.example:99999" is not a host name or host:port'],
      [{ TRIBUTARY_PUBLIC_HOSTS: "::1" }, '"::1" is not a host name or host:port (no scheme, no path; IPv6 addresses in brackets)'],
      [{ TRIBUTARY_CORS_ORIGINS: "*" }, '"*" is not allowed: CORS with credentials needs each origin listed'],
      [{ TRIBUTARY_CORS_ORIGINS: "app.example.com" }, '"app.example.com" is not an origin (scheme://host[:port])'],
      [{ TRIBUTARY_CORS_ORIGINS: "https://app.example.com/ui" }, "write it as a browser sends it, https://app.example.com"],
      [{ TRIBUTARY_CORS_ORIGINS: "https://app.example.com:443" }, "write it as a browser sends it, https://app.example.com"],
      [{ TRIBUTARY_CORS_ORIGINS: "ftp://app.example.com" }, "is not an http:// or https:// origin"],
      [{ TRIBUTARY_TRUST_PROXY: "yes" }, 'environment variable TRIBUTARY_TRUST_PROXY: must be "true" or "false"'],
      [{ TRIBUTARY_MUTATIONS_PER_MINUTE: "many" }, "environment variable TRIBUTARY_MUTATIONS_PER_MINUTE: must be a whole number"],
      [{ TRIBUTARY_MUTATION_BURST: "0" }, "environment variable TRIBUTARY_MUTATION_BURST: must be between 1 and 1000000"],
    ];
    for (const [env, message] of refused) expect(() => http(env), JSON.stringify(env)).toThrow(message);
  });
});
