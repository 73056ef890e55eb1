package install

import (
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TenantRole is the ClusterRole a platform team binds, with a
// RoleBinding in a team's namespace, to let the team back up and restore
// that namespace (docs/self-service.md).
const TenantRole = "salvor-tenant"

// TenantRules are what a tenant may do in its own namespace: make and
// follow Backups, Restores and Schedules (cancel and pause are patches),
// read their logs and results through DownloadRequests, and see their
// volumes' progress. Deleting backups stays with the platform team, as
// for salvor-operator; locations, Secrets and every other namespace are
// not theirs.
var TenantRules = []rbacv1.PolicyRule{
	{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"backups", "restores", "schedules"}, Verbs: []string{"get", "list", "watch", "create", "patch"}},
	{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"downloadrequests"}, Verbs: []string{"create", "get"}},
	{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"volumepluginbackups", "volumepluginrestores"}, Verbs: []string{"get", "list", "watch"}},
}

// TenantServerRules are what the server's --tenants mode does in every
// namespace: follow teams' Backups, Restores, Schedules and
// DownloadRequests, write their status, make a schedule's Backups, and
// remove the records of those the platform team deleted. What it does in
// a tenant's name it asks the API server about first
// (SubjectAccessReview, which the server's rules allow already).
var TenantServerRules = []rbacv1.PolicyRule{
	{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"backups"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"restores", "downloadrequests"}, Verbs: []string{"get", "list", "watch", "patch", "delete"}},
	{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"schedules"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"backups/status", "restores/status", "schedules/status", "downloadrequests/status"}, Verbs: []string{"update"}},
}

// requesterPolicies are the admission policies of TenantObjects, by name,
// for uninstall.
func requesterPolicies() []client.Object {
	meta := metav1.ObjectMeta{Name: requesterPolicy}
	return []client.Object{
		&admissionv1.MutatingAdmissionPolicyBinding{ObjectMeta: meta}, &admissionv1.MutatingAdmissionPolicy{ObjectMeta: meta},
		&admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: meta}, &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: meta},
	}
}

// requesterPolicy names the admission policies that record who made a
// tenant's object and keep it so.
const requesterPolicy = "salvor-requester"

// TenantObjects are what the server's --tenants mode needs beside the
// install: the salvor-tenant ClusterRole, and admission policies the API
// server runs itself (no webhook to serve or keep up): one that writes
// the requester's name and groups on every Backup, Restore, Schedule and
// DownloadRequest created outside the server's namespace (ns) over what
// the client sent, and one that refuses any change of them afterwards.
// Objects the server itself (account sa) creates there — a schedule's
// backups — carry the requester it copies from their maker.
// MutatingAdmissionPolicy is served from Kubernetes 1.36 on.
func TenantObjects(ns, sa string, labels map[string]string) []client.Object {
	server := fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa)
	match := &admissionv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{ns}}}},
	}
	rules := func(ops ...admissionv1.OperationType) []admissionv1.NamedRuleWithOperations {
		return []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: ops,
			Rule: admissionv1.Rule{APIGroups: []string{salvorv1.GroupVersion.Group}, APIVersions: []string{"*"},
				Resources: []string{"backups", "restores", "schedules", "downloadrequests"}},
		}}}
	}
	mutateMatch, validateMatch := match.DeepCopy(), match.DeepCopy()
	mutateMatch.ResourceRules = rules(admissionv1.Create)
	validateMatch.ResourceRules = rules(admissionv1.Update)
	fail := admissionv1.Fail
	annotation := func(obj, key string) string {
		return fmt.Sprintf("(has(%[1]s.metadata.annotations) && %[2]q in %[1]s.metadata.annotations ? %[1]s.metadata.annotations[%[2]q] : '')", obj, key)
	}
	unchanged := func(key string) admissionv1.Validation {
		return admissionv1.Validation{
			Expression: annotation("object", key) + " == " + annotation("oldObject", key),
			Message:    fmt.Sprintf("%s is written by the API server when the object is created (who made it, as the server acts only with their rights) and cannot be changed", key),
			Reason:     ptr(metav1.StatusReasonForbidden),
		}
	}
	return []client.Object{
		clusterRole(TenantRole, labels, TenantRules),
		&admissionv1.MutatingAdmissionPolicy{
			TypeMeta:   tm("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy"),
			ObjectMeta: metav1.ObjectMeta{Name: requesterPolicy, Labels: labels},
			Spec: admissionv1.MutatingAdmissionPolicySpec{
				MatchConstraints: mutateMatch,
				MatchConditions:  []admissionv1.MatchCondition{{Name: "not-the-server", Expression: fmt.Sprintf("request.userInfo.username != %q", server)}},
				Mutations: []admissionv1.Mutation{{PatchType: admissionv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionv1.ApplyConfiguration{
					Expression: fmt.Sprintf(`Object{metadata: Object.metadata{annotations: {%q: request.userInfo.username, %q: request.userInfo.groups.join("\n")}}}`,
						salvorv1.RequestedByAnnotation, salvorv1.RequestedByGroupsAnnotation),
				}}},
				FailurePolicy:      &fail,
				ReinvocationPolicy: admissionv1.IfNeededReinvocationPolicy,
			},
		},
		&admissionv1.MutatingAdmissionPolicyBinding{
			TypeMeta:   tm("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding"),
			ObjectMeta: metav1.ObjectMeta{Name: requesterPolicy, Labels: labels},
			Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: requesterPolicy},
		},
		&admissionv1.ValidatingAdmissionPolicy{
			TypeMeta:   tm("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
			ObjectMeta: metav1.ObjectMeta{Name: requesterPolicy, Labels: labels},
			Spec: admissionv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: validateMatch,
				Validations:      []admissionv1.Validation{unchanged(salvorv1.RequestedByAnnotation), unchanged(salvorv1.RequestedByGroupsAnnotation)},
				FailurePolicy:    &fail,
			},
		},
		&admissionv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   tm("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"),
			ObjectMeta: metav1.ObjectMeta{Name: requesterPolicy, Labels: labels},
			Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: requesterPolicy,
				ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
		},
	}
}
