// cache-hooks.mjs: a module resolution hook (node:module register) that
// evaluate.mjs installs before it loads the evaluator. It hands
// @cloud-copilot/iam-simulate, for its import of @cloud-copilot/iam-utils,
// iam-utils-cached.mjs instead: the same module with one pure function
// remembered. Nothing of either package is changed or copied; every other
// importer gets iam-utils itself.
const cached = new URL('./iam-utils-cached.mjs', import.meta.url).href
const simulate = '/node_modules/@cloud-copilot/iam-simulate/'

export async function resolve(specifier, context, next) {
  if (specifier !== '@cloud-copilot/iam-utils' || !context.parentURL?.includes(simulate)) {
    return next(specifier, context)
  }
  // the wrapper imports iam-utils from test/iamsim: it must be the copy
  // iam-simulate would get, not one of its own
  const own = await next(specifier, context)
  const ours = await next(specifier, { ...context, parentURL: cached })
  if (own.url !== ours.url) {
    throw new Error(`iam-simulate resolves @cloud-copilot/iam-utils to ${own.url}, the cache wraps ${ours.url}: align the versions in package.json`)
  }
  return { url: cached, shortCircuit: true }
}
