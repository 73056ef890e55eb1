package restore

import (
	"context"
	"fmt"
	"strings"

	"github.com/salvor-dev/salvor/internal/configmapref"
	"github.com/salvor-dev/salvor/internal/modifiers"
)

// loadModifiers reads the restore's resource modifier rules. Validation
// has read them once already; problems here mean the ConfigMap changed
// since, and the restore stops before it makes anything.
func (r *run) loadModifiers(ctx context.Context) error {
	rules, problems, err := modifiers.Load(ctx, configmapref.Dynamic(r.e.Dynamic), r.restore.Namespace, r.restore.Spec.ResourceModifier)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	r.modifiers = rules
	return nil
}
