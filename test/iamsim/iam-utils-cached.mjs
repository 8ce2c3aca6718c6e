// iam-utils-cached.mjs: @cloud-copilot/iam-utils as iam-simulate sees it
// when evaluate.mjs caches (cache-hooks.mjs). One function is remembered:
// mostSpecificMatchingResourceTypePatterns(resource, patterns), which
// iam-simulate calls for every request (twice: the request's context keys
// and its resource types) to match the request's ARN against each resource
// type of its action. It builds and intersects automata for each pattern on
// every call, about three quarters of a catalogue evaluation's CPU (a CPU
// profile of 4,091 requests), and its answer depends only on its two
// arguments. Everything else is iam-utils' own export.
import { mostSpecificMatchingResourceTypePatterns as uncached } from '@cloud-copilot/iam-utils'
export * from '@cloud-copilot/iam-utils'

const answers = new Map()

// loaded tells evaluate.mjs that iam-simulate took this module.
globalThis.eksFleetIamUtilsCached = true

export function mostSpecificMatchingResourceTypePatterns(resourceString, resourcePatterns) {
  const key = resourceString + '\u0000' + resourcePatterns.join('\u0000')
  let answer = answers.get(key)
  if (answer === undefined) {
    answer = uncached(resourceString, resourcePatterns)
    answers.set(key, answer)
  }
  return answer.slice() // the caller gets its own array, as from iam-utils
}
