// A node:test reporter: prints `PASS name` / `FAIL name: reason` for every test, ends with
// `N passed, N failed`, and, when WSP_REPORT names a file, writes there the JSON report that
// `cargo xtask interop-matrix` reads: {client, clientVersion, host, checks: [{name, pass, reason}]}
// with the client's name and version taken from WSP_REPORT_CLIENT and WSP_REPORT_VERSION and the
// host from WSP_REPORT_HOST.
//
// Usage: node --test --test-reporter=./report.mjs --test-reporter-destination=stdout FILES...

import { writeFileSync } from "node:fs";

export default async function* report(source) {
  const checks = [];
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    const data = event.data;
    if (data.details?.type === "suite") continue;
    const pass = event.type === "test:pass" && !data.skip && !data.todo;
    let reason = "";
    if (!pass) {
      const error = data.details?.error;
      const cause = error?.cause ?? error;
      reason = data.skip || data.todo ? "skipped" : String(cause?.message ?? cause ?? "failed").split("\n")[0];
    }
    checks.push({ name: data.name, pass, reason });
    yield pass ? `PASS ${data.name}\n` : `FAIL ${data.name}: ${reason}\n`;
  }
  const passed = checks.filter((c) => c.pass).length;
  const path = process.env.WSP_REPORT;
  if (path) {
    const report = {
      client: process.env.WSP_REPORT_CLIENT ?? "?",
      clientVersion: process.env.WSP_REPORT_VERSION ?? "?",
      host: process.env.WSP_REPORT_HOST ?? "wsp serve",
      checks,
    };
    writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  }
  yield `${passed} passed, ${checks.length - passed} failed\n`;
}
