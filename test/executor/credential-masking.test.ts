import { describe, expect, it } from "vitest";
import { newApiToken, signAccessToken } from "../../src/access/index.js";
import { maskCredentials } from "../../src/errors/index.js";
import { redactSerializedError } from "../../src/executor/secrets.js";
import { formatLogLine, Redactor } from "../../src/executor/step-log.js";

// Tokens are masked by their shape, with or without secrets registered: a step never has to say which it printed.
describe("masking API and access tokens", () => {
  const { token } = newApiToken();

  it("masks an API token wherever it stands, and leaves look-alikes that are not one", () => {
    expect(maskCredentials(`Bearer ${token}`)).toBe("Bearer ***");
    expect(maskCredentials(`?token=${token}&x=1`)).toBe("?token=***&x=1");
    expect(maskCredentials(`"${token}","${token}"`)).toBe('"***","***"');
    // Too short, or longer than a token: another string that starts alike.
    expect(maskCredentials("trb_short")).toBe("trb_short");
    expect(maskCredentials(`${token}abc`)).toBe(`${token}abc`);
  });

  it("masks a signed access token (JWT)", async () => {
    const jwt = await signAccessToken({ id: "k", secret: "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0" }, { id: "p", name: "ann" }, new Date());
    expect(maskCredentials(`Authorization: Bearer ${jwt}`)).toBe("Authorization: Bearer ***");
  });

  it("masks tokens in log lines and errors without any secret registered", () => {
    const redactor = new Redactor();
    expect(redactor.redact(`using ${token}`)).toBe("using ***");
    expect(formatLogLine(new Date(0), "info", `using ${token}`, { header: `Bearer ${token}` })).toBe(
      '1970-01-01T00:00:00.000Z INFO using *** {"header":"Bearer ***"}\n',
    );
    const error = redactSerializedError(
      { name: "Error", code: "ERROR", message: `refused ${token}`, stack: `Error: refused ${token}` },
      redactor,
    );
    expect(error).toMatchObject({ message: "refused ***", stack: "Error: refused ***" });
  });

  it("masks tokens and registered secrets together", () => {
    const redactor = new Redactor().add("hunter22");
    expect(redactor.redact(`hunter22 and ${token}`)).toBe("*** and ***");
  });
});
