package selfservice

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// downloads mirrors tenants' DownloadRequests: a file of one of the
// namespace's own backups or restores, served by the server's
// DownloadRequest of its copy.
type downloads struct {
	Tenants, Server client.Reader
	Namespace       string
}

func (d *downloads) kind() kind[salvorv1.DownloadRequest, *salvorv1.DownloadRequest] {
	return kind[salvorv1.DownloadRequest, *salvorv1.DownloadRequest]{
		name:  "downloadrequest",
		judge: d.judge,
		refuse: func(t *salvorv1.DownloadRequest, problems []string) {
			t.Status.Phase, t.Status.Message = salvorv1.DownloadRequestPhaseFailed, strings.Join(problems, "; ")
		},
		started: func(t *salvorv1.DownloadRequest) bool {
			return t.Status.Phase != "" && t.Status.Phase != salvorv1.DownloadRequestPhaseNew
		},
		done: func(t *salvorv1.DownloadRequest) bool {
			return t.Status.Phase == salvorv1.DownloadRequestPhaseProcessed || t.Status.Phase == salvorv1.DownloadRequestPhaseFailed
		},
		// As the server's own: an hour after it was made.
		forget: func(t *salvorv1.DownloadRequest) time.Duration {
			return max(time.Until(t.CreationTimestamp.Add(time.Hour)), 0)
		},
		lost: func(t *salvorv1.DownloadRequest) {
			t.Status.Phase, t.Status.Message = salvorv1.DownloadRequestPhaseFailed, "its copy in the server's namespace was deleted before it was answered"
		},
		follow: func(m, t *salvorv1.DownloadRequest) bool {
			return followStatus(&m.Status, &t.Status, m.Status.Phase != "" && m.Status.Phase != salvorv1.DownloadRequestPhaseNew)
		},
	}
}

// judge points a tenant's request at the copy of the namespace's own
// backup or restore it names.
func (d *downloads) judge(ctx context.Context, t *salvorv1.DownloadRequest) (*salvorv1.DownloadRequest, []string, error) {
	var target client.Object = &salvorv1.Backup{}
	what := "backup"
	if strings.HasPrefix(string(t.Spec.Target.Kind), "Restore") {
		target, what = &salvorv1.Restore{}, "restore"
	}
	if err := d.Tenants.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.Target.Name}, target); apierrors.IsNotFound(err) {
		return nil, []string{fmt.Sprintf("%s %q does not exist in namespace %s", what, t.Spec.Target.Name, t.Namespace)}, nil
	} else if err != nil {
		return nil, nil, err
	}
	if b, ok := target.(*salvorv1.Backup); ok && isShared(b) {
		return nil, []string{fmt.Sprintf("backup %q is the platform team's, shared with namespace %s to restore from: its logs and contents hold other namespaces too, so they are not offered here", b.Name, t.Namespace)}, nil
	}
	name, err := mirrorName(t.Namespace, t.Spec.Target.Name)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s %q never ran", what, t.Spec.Target.Name)}, nil
	}
	copy := target.DeepCopyObject().(client.Object)
	if err := d.Server.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: name}, copy); apierrors.IsNotFound(err) || (err == nil && !mirrors(copy, target)) {
		return nil, []string{fmt.Sprintf("%s %q has no copy in the server's namespace: it never ran, or the platform team deleted it", what, t.Spec.Target.Name)}, nil
	} else if err != nil {
		return nil, nil, err
	}
	m := &salvorv1.DownloadRequest{Spec: *t.Spec.DeepCopy()}
	m.Spec.Target.Name = name
	return m, nil, nil
}
