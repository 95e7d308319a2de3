// A very small test harness for the page's modules: `test(name, fn)` collects, `run()` runs them
// in order (awaiting async ones) and returns [{name, ok, error}].
const tests = [];

export function test(name, body) {
  tests.push({ name, body });
}

export function equal(actual, expected, what = "") {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new Error(`${what ? `${what}: ` : ""}expected ${e}, got ${a}`);
}

export function ok(condition, what) {
  if (!condition) throw new Error(`expected: ${what}`);
}

export async function rejects(promise, check, what) {
  try {
    await promise;
  } catch (error) {
    check(error);
    return;
  }
  throw new Error(`expected a rejection: ${what}`);
}

export async function run() {
  const results = [];
  for (const { name, body } of tests) {
    try {
      await body();
      results.push({ name, ok: true });
    } catch (error) {
      results.push({ name, ok: false, error: String(error && error.stack ? error.stack : error) });
    }
  }
  return results;
}
