package e2e

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salvor-dev/salvor/internal/cli/install"
)

// metricsReader returns a token of a service account bound to the rules
// `salvor install` gives its salvor-metrics-reader role, as Prometheus's.
func (c *cluster) metricsReader(t testing.TB) string {
	t.Helper()
	c.create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: "salvor"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics-reader"}, Rules: install.MetricsReaderRules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics-reader"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "e2e-metrics-reader"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "salvor"}}})
	return c.token(t, "salvor", "prometheus")
}

// fetch gets url with a bearer token (none when empty). The metrics
// endpoint's certificate is the server's own self-signed one.
func fetch(t testing.TB, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// right is something an account may (want) or may not do.
type right struct {
	attrs authorizationv1.ResourceAttributes
	want  bool
}

// checkRights asks the API server, for each right, whether service account
// ns/name may do it, and fails the test where the answer is not the one
// wanted: an account's rights proven enough and no more.
func (c *cluster) checkRights(t testing.TB, ns, name string, rights []right) {
	t.Helper()
	user, groups := "system:serviceaccount:"+ns+":"+name, []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	for _, r := range rights {
		if got := c.allowed(t, user, groups, &r.attrs, nil); got != r.want {
			t.Errorf("%s may %s %s/%s (group %q) in %q: %v, want %v", user, r.attrs.Verb, r.attrs.Resource, r.attrs.Subresource, r.attrs.Group, r.attrs.Namespace, got, r.want)
		}
	}
}

// allowed asks the API server whether user (in groups) may do what attrs say.
func (c *cluster) allowed(t testing.TB, user string, groups []string, attrs *authorizationv1.ResourceAttributes, nonResource *authorizationv1.NonResourceAttributes) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups, ResourceAttributes: attrs, NonResourceAttributes: nonResource}}
	if err := c.client.Create(context.Background(), sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}
