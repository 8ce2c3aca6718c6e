package aws

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Resource is one resource that exists in the stand-in account.
type Resource struct {
	Kind string // Group/Kind of the managed resource that made it
	// Type is the Terraform resource type.
	Type string
	// Name is its external name (the ID, or the name AWS knows it by).
	Name string
	ID   string
	ARN  string
	// Owner is the managed resource that created it.
	Owner string
	// Account is the account it was made in (the one its managed
	// resource's ProviderConfig reached).
	Account string
	// Attrs are its arguments (spec.forProvider as last applied) and what
	// AWS computed (status.atProvider).
	Attrs, Computed map[string]any
	Tags            map[string]string
	// Updates counts the updates applied (a launch template's versions).
	Updates int
	Created time.Time
	// ReadyAt is when AWS reports it available.
	ReadyAt time.Time
	// Previous are arguments AWS still reports with their old values while
	// an update runs, until UpdatedAt (an EKS version update).
	Previous  map[string]any
	UpdatedAt time.Time
}

// Reported is what AWS reports for argument key now: its previous value
// while an update of it runs.
func (r Resource) Reported(key string, now time.Time) any {
	if v, ok := r.Previous[key]; ok && now.Before(r.UpdatedAt) {
		return v
	}
	return r.Attrs[key]
}

// Ledger is what exists in the account, and what happened to it.
type Ledger struct {
	mu       sync.Mutex
	res      map[string]*Resource // Kind/ID
	log      []string
	deleted  []Deletion
	orphaned []Deletion
	refused  []Refusal
	calls    map[string]int
	// gen counts the changes to what exists (puts, updates, removals).
	gen uint64
}

// generation changes whenever a resource is put, updated or removed.
func (l *Ledger) generation() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen
}

// Deletion is one resource deleted from the account, or left in it by a
// managed resource's deletionPolicy Orphan, and when.
type Deletion struct {
	Kind, ID string
	At       time.Time
}

// Refusal is one delete AWS refused, with its reason, and when.
type Refusal struct {
	Kind, ID, Reason string
	At               time.Time
}

// NewLedger returns an empty account.
func NewLedger() *Ledger { return &Ledger{res: map[string]*Resource{}, calls: map[string]int{}} }

func (l *Ledger) put(r *Resource) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.res[r.Kind+"/"+r.ID] = r
	l.gen++
	l.log = append(l.log, fmt.Sprintf("%s create %s %s (%s)", time.Now().Format("15:04:05.000"), r.Kind, r.ID, r.Owner))
}

func (l *Ledger) get(kind, id string) *Resource {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.res[kind+"/"+id]
}

func (l *Ledger) remove(kind, id string) { l.removeAs("delete", kind, id) }

// removeAs removes kind/id, logged with verb.
func (l *Ledger) removeAs(verb, kind, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.res, kind+"/"+id)
	l.gen++
	l.deleted = append(l.deleted, l.logged(verb, kind, id, ""))
}

// CreateByHand makes r outside Crossplane, as another team or an
// operator does with AWS's console or CLI: "<time> create <kind> <id> (by
// hand)". r must carry what AWS would give it (its ID and ARN).
func (l *Ledger) CreateByHand(r Resource) {
	r.Owner = "by hand"
	if r.Created.IsZero() {
		r.Created = time.Now()
	}
	l.put(&r)
}

// DeleteByHand deletes a resource outside Crossplane, as an operator
// does with AWS's console or CLI (what break glass's help asks for the
// resources it abandons): "<time> delete by hand <kind> <id>".
func (l *Ledger) DeleteByHand(kind, id string) { l.removeAs("delete by hand", kind, id) }

// logged logs "<time> <verb> <kind> <id><detail>" and returns kind/id at
// that time; l.mu is held.
func (l *Ledger) logged(verb, kind, id, detail string) Deletion {
	now := time.Now()
	l.log = append(l.log, fmt.Sprintf("%s %s %s %s%s", now.Format("15:04:05.000"), verb, kind, id, detail))
	return Deletion{Kind: kind, ID: id, At: now}
}

// Deletions returns the resources deleted, in order.
func (l *Ledger) Deletions() []Deletion {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Deletion(nil), l.deleted...)
}

// orphan records that a managed resource went and left its resource in
// the account ("<time> orphan <kind> <id> (deletionPolicy Orphan)").
func (l *Ledger) orphan(kind, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.orphaned = append(l.orphaned, l.logged("orphan", kind, id, " (deletionPolicy Orphan)"))
}

// Orphaned returns the resources managed resources left in the account
// as they went (deletionPolicy Orphan), in order.
func (l *Ledger) Orphaned() []Deletion {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Deletion(nil), l.orphaned...)
}

// refuse records a delete AWS refused ("<time> refuse delete <kind> <id>:
// <reason>").
func (l *Ledger) refuse(kind, id, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.logged("refuse delete", kind, id, ": "+reason)
	l.refused = append(l.refused, Refusal{Kind: kind, ID: id, Reason: reason, At: d.At})
}

// Refused returns the deletes AWS refused, in order, each time it did.
func (l *Ledger) Refused() []Refusal {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Refusal(nil), l.refused...)
}

func (l *Ledger) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

// All returns a copy of every resource, sorted by kind and ID.
func (l *Ledger) All() []Resource {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Resource, 0, len(l.res))
	for _, r := range l.res {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Find returns the resources of kind (Group/Kind, Kind alone, or "" for
// every kind) for which match is true (nil: all).
func (l *Ledger) Find(kind string, match func(Resource) bool) []Resource {
	var out []Resource
	for _, r := range l.All() {
		if kind != "" && r.Kind != kind && !strings.HasSuffix(r.Kind, "/"+kind) {
			continue
		}
		if match == nil || match(r) {
			out = append(out, r)
		}
	}
	return out
}

// Log returns what happened, in order.
func (l *Ledger) Log() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.log...)
}

// update applies attrs to a resource and logs which arguments changed
// ("<time> update <kind> <id> (<argument>, ...)").
func (l *Ledger) update(kind, id string, attrs map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.res[kind+"/"+id]; ok {
		diff := changed(r.Attrs, attrs)
		r.Attrs = attrs
		r.Tags = tagsOf(attrs)
		r.Updates++
		l.gen++
		l.log = append(l.log, fmt.Sprintf("%s update %s %s (%s)", time.Now().Format("15:04:05.000"), kind, id, strings.Join(diff, ", ")))
	}
}

// updating records that AWS reports previous until until.
func (l *Ledger) updating(kind, id string, previous map[string]any, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.res[kind+"/"+id]; ok {
		r.Previous, r.UpdatedAt = previous, until
	}
}

// tagsOf reads the tags argument.
func tagsOf(attrs map[string]any) map[string]string {
	out := map[string]string{}
	if t, ok := attrs["tags"].(map[string]any); ok {
		for k, v := range t {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
	}
	return out
}
