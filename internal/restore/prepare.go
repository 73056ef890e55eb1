package restore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/dynamic"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"

	"github.com/salvor-dev/salvor/internal/configmapref"
	"github.com/salvor-dev/salvor/internal/modifiers"
	"github.com/salvor-dev/salvor/internal/resourcepolicy"
)

// Prepared is what a restore's spec points to outside itself — its
// resource modifier rules and resource policies, each in a ConfigMap — and
// the storage class and image name mappings configured beside it, read
// once: the reconciler's validation judges these answers and the run
// uses the same ones, so a ConfigMap edited in between cannot make the run
// differ from what was judged.
type Prepared struct {
	Modifiers *modifiers.Rules
	Policies  *resourcepolicy.Policies
	Mappings  *Mappings
}

// Prepare reads rs's ConfigMaps and those of its namespace's mappings. problems say what the user must fix in
// them (each names the spec's field and the ConfigMap); err is a failure to
// read, worth trying again.
func Prepare(ctx context.Context, dyn dynamic.Interface, rs *salvorv1.Restore) (p *Prepared, problems []string, err error) {
	get := configmapref.Dynamic(dyn)
	p = &Prepared{}
	var bad []string
	if p.Modifiers, bad, err = modifiers.Load(ctx, get, rs.Namespace, rs.Spec.ResourceModifier); err != nil {
		return nil, nil, err
	}
	problems = append(problems, bad...)
	if p.Policies, bad, err = resourcepolicy.LoadForRestore(ctx, get, rs.Namespace, rs.Spec.ResourcePolicy); err != nil {
		return nil, nil, err
	}
	problems = append(problems, bad...)
	if p.Mappings, bad, err = LoadMappings(ctx, dyn, rs.Namespace); err != nil {
		return nil, nil, err
	}
	return p, append(problems, bad...), nil
}

// prepared is the run's Prepared: the one its validation read (ForRun),
// or, for a run no reconciler judged, read now, where a problem stops the
// restore before it makes anything.
func (e *Engine) prepared(ctx context.Context, rs *salvorv1.Restore) (*Prepared, error) {
	if e.prep != nil {
		return e.prep, nil
	}
	p, problems, err := Prepare(ctx, e.Dynamic, rs)
	if err == nil && len(problems) > 0 {
		err = errors.New(strings.Join(problems, "; "))
	}
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", rs.Name, err)
	}
	return p, nil
}
