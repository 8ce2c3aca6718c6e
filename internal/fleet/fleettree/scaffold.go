package fleettree

import "github.com/gitops-fleet/eks-fleet/internal/fleet/kustfile"

// WorkloadsScaffold is what `fleet cluster add` writes into a new
// cluster's workloads folder besides the sealed deploy key (DeployKeyRel):
// the folder's kustomization.yaml, listing nothing yet, and the deploy-key
// folder's, listing only the key. By path relative to the tree. The
// auto-approval rule compares a pull request's files with these.
func WorkloadsScaffold(name string) map[string][]byte {
	wl := WorkloadsRel(name)
	return map[string][]byte{
		wl + "/" + Kustomization: kustfile.New(
			"Apps on spoke " + name + ": the governance team adds one entry per app\n(fleet app add APP --cluster " + name + " ...). The spoke's own Flux applies this folder."),
		wl + "/" + DeployKeyDir + "/" + Kustomization: kustfile.New(
			"The spoke's read-only Git deploy key, sealed for this environment. The hub\napplies it onto the spoke during bootstrap, before the spoke's GitRepository.",
			DeployKeyFile),
	}
}
