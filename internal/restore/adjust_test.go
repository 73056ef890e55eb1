package restore

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestAdjust(t *testing.T) {
	mapping := func(ns string) string {
		if ns == "shop" {
			return "shop-copy"
		}
		return ns
	}
	for _, tc := range []struct {
		name     string
		gr       schema.GroupResource
		in, want string
	}{
		{"a legacy webhook's side effects", schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"},
			`{"apiVersion":"admissionregistration.k8s.io/v1","webhooks":[{"name":"a","sideEffects":"Unknown"},{"name":"b","sideEffects":"NoneOnDryRun"},{"name":"c","sideEffects":"Some"}]}`,
			`{"apiVersion":"admissionregistration.k8s.io/v1","webhooks":[{"name":"a","sideEffects":"None"},{"name":"b","sideEffects":"NoneOnDryRun"},{"name":"c","sideEffects":"None"}]}`},
		{"a legacy CRD keeps unknown fields in its schema", schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
			`{"apiVersion":"apiextensions.k8s.io/v1","spec":{"preserveUnknownFields":true,"versions":[{"name":"v1","schema":{"openAPIV3Schema":{"type":"object",` +
				`"properties":{"spec":{"type":"object","properties":{"n":{"type":"integer"},"p":{"x-kubernetes-int-or-string":true},"m":{"type":"object","additionalProperties":{"type":"object"}}}}}}}}]}}`,
			`{"apiVersion":"apiextensions.k8s.io/v1","spec":{"preserveUnknownFields":false,"versions":[{"name":"v1","schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true,` +
				`"properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"n":{"type":"integer"},"p":{"x-kubernetes-int-or-string":true},` +
				`"m":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"additionalProperties":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}}}}]}}`},
		{"a CRD without preserveUnknownFields is left", schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
			`{"apiVersion":"apiextensions.k8s.io/v1","spec":{"versions":[{"name":"v1","schema":{"openAPIV3Schema":{"type":"object"}}}]}}`,
			`{"apiVersion":"apiextensions.k8s.io/v1","spec":{"versions":[{"name":"v1","schema":{"openAPIV3Schema":{"type":"object"}}}]}}`},
		{"a service account's legacy token secrets go", schema.GroupResource{Resource: "serviceaccounts"},
			`{"metadata":{"name":"app"},"secrets":[{"name":"app-token-x7k2p"},{"name":"app-registry"}]}`,
			`{"metadata":{"name":"app"},"secrets":[{"name":"app-registry"}]}`},
		{"only token secrets: none left", schema.GroupResource{Resource: "serviceaccounts"},
			`{"metadata":{"name":"app"},"secrets":[{"name":"app-token-x7k2p"}]}`, `{"metadata":{"name":"app"}}`},
		{"another account's token stays", schema.GroupResource{Resource: "serviceaccounts"},
			`{"metadata":{"name":"app"},"secrets":[{"name":"web-token-x7k2p"}]}`, `{"metadata":{"name":"app"},"secrets":[{"name":"web-token-x7k2p"}]}`},
		{"volume follows its claim", schema.GroupResource{Resource: "persistentvolumes"},
			`{"spec":{"claimRef":{"namespace":"shop","name":"data"}}}`,
			`{"spec":{"claimRef":{"name":"data","namespace":"shop-copy"}}}`},
		{"binding's service accounts follow their namespace", schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
			`{"subjects":[{"kind":"ServiceAccount","name":"app","namespace":"shop"},{"kind":"ServiceAccount","name":"dns","namespace":"kube-system"},{"kind":"Group","name":"devs"}]}`,
			`{"subjects":[{"kind":"ServiceAccount","name":"app","namespace":"shop-copy"},{"kind":"ServiceAccount","name":"dns","namespace":"kube-system"},{"kind":"Group","name":"devs"}]}`},
		{"cluster binding too", schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
			`{"subjects":[{"kind":"ServiceAccount","name":"app","namespace":"shop"}]}`,
			`{"subjects":[{"kind":"ServiceAccount","name":"app","namespace":"shop-copy"}]}`},
		{"a role binding of another group is left", schema.GroupResource{Group: "example.com", Resource: "rolebindings"},
			`{"subjects":[{"namespace":"shop"}]}`, `{"subjects":[{"namespace":"shop"}]}`},
		{"job's generated selector goes", schema.GroupResource{Group: "batch", Resource: "jobs"},
			`{"spec":{"selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"u1"}},"template":{"metadata":{"labels":{"batch.kubernetes.io/controller-uid":"u1","controller-uid":"u1","job-name":"migrate","app":"db"}}}}}`,
			`{"spec":{"template":{"metadata":{"labels":{"app":"db","job-name":"migrate"}}}}}`},
		{"a manual job selector stays", schema.GroupResource{Group: "batch", Resource: "jobs"},
			`{"spec":{"manualSelector":true,"selector":{"matchLabels":{"controller-uid":"mine"}},"template":{"metadata":{"labels":{"controller-uid":"mine"}}}}}`,
			`{"spec":{"manualSelector":true,"selector":{"matchLabels":{"controller-uid":"mine"}},"template":{"metadata":{"labels":{"controller-uid":"mine"}}}}}`},
		{"a job selector with expressions keeps them", schema.GroupResource{Group: "batch", Resource: "jobs"},
			`{"spec":{"selector":{"matchLabels":{"controller-uid":"u1"},"matchExpressions":[{"key":"a","operator":"Exists"}]}}}`,
			`{"spec":{"selector":{"matchExpressions":[{"key":"a","operator":"Exists"}],"matchLabels":{}}}}`},
		{"pod loses node, priority, debug containers and legacy token volume", schema.GroupResource{Resource: "pods"},
			`{"spec":{"nodeName":"node-1","priority":1000,"priorityClassName":"high","serviceAccountName":"app","ephemeralContainers":[{"name":"debugger","image":"busybox"}],
			  "volumes":[{"name":"tok","secret":{"secretName":"app-token-x7k2p"}},{"name":"conf","configMap":{"name":"conf"}}],
			  "containers":[{"name":"c","volumeMounts":[{"name":"tok","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"},{"name":"conf","mountPath":"/etc/conf"}]}],
			  "initContainers":[{"name":"i","volumeMounts":[{"name":"tok","mountPath":"/t"}]}]}}`,
			`{"spec":{"containers":[{"name":"c","volumeMounts":[{"mountPath":"/etc/conf","name":"conf"}]}],"initContainers":[{"name":"i","volumeMounts":[]}],
			  "priorityClassName":"high","serviceAccountName":"app","volumes":[{"configMap":{"name":"conf"},"name":"conf"}]}}`},
		{"a pod's other secrets stay; a malformed volume is no panic", schema.GroupResource{Resource: "pods"},
			`{"spec":{"volumes":[{"name":"s","secret":{"secretName":"db-token-store"}},{"name":7},"junk"]}}`,
			`{"spec":{"volumes":[{"name":"s","secret":{"secretName":"db-token-store"}},{"name":7},"junk"]}}`},
		{"the default account's legacy token", schema.GroupResource{Resource: "pods"},
			`{"spec":{"volumes":[{"name":"default-token-abcde","secret":{"secretName":"default-token-abcde"}}],"containers":[{"name":"c","volumeMounts":[{"name":"default-token-abcde","mountPath":"/x"}]}]}}`,
			`{"spec":{"containers":[{"name":"c","volumeMounts":[]}],"volumes":[]}}`},
		{"a token secret loses the old account's token", schema.GroupResource{Resource: "secrets"},
			`{"type":"kubernetes.io/service-account-token","metadata":{"annotations":{"kubernetes.io/service-account.name":"app","kubernetes.io/service-account.uid":"old"}},"data":{"token":"dG9r","ca.crt":"Y2E=","namespace":"c2hvcA=="}}`,
			`{"data":{"namespace":"c2hvcA=="},"metadata":{"annotations":{"kubernetes.io/service-account.name":"app"}},"type":"kubernetes.io/service-account-token"}`},
		{"an ordinary secret keeps its token", schema.GroupResource{Resource: "secrets"},
			`{"type":"Opaque","data":{"token":"dG9r"}}`, `{"type":"Opaque","data":{"token":"dG9r"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := json.Unmarshal([]byte(tc.in), &obj.Object); err != nil {
				t.Fatal(err)
			}
			Adjust(tc.gr, obj, mapping)
			var want map[string]any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(obj.Object)
			wantJSON, _ := json.Marshal(want)
			if string(got) != string(wantJSON) {
				t.Errorf("got  %s\nwant %s", got, wantJSON)
			}
		})
	}
}

func TestLeftOut(t *testing.T) {
	apiservices := schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}
	jobs := schema.GroupResource{Group: "batch", Resource: "jobs"}
	pods := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name string
		gr   schema.GroupResource
		obj  string
		out  bool
	}{
		{"automanaged APIService", apiservices, `{"metadata":{"labels":{"kube-aggregator.kubernetes.io/automanaged":"onstart"}}}`, true},
		{"automanaged true", apiservices, `{"metadata":{"labels":{"kube-aggregator.kubernetes.io/automanaged":"true"}}}`, true},
		{"an aggregated API someone installed", apiservices, `{"metadata":{"name":"v1beta1.metrics.k8s.io"}}`, false},
		{"the label on another resource", schema.GroupResource{Resource: "configmaps"}, `{"metadata":{"labels":{"kube-aggregator.kubernetes.io/automanaged":"onstart"}}}`, false},
		{"completed job", jobs, `{"status":{"completionTime":"2026-11-20T02:00:00Z","succeeded":1}}`, true},
		{"failed job", jobs, `{"status":{"conditions":[{"type":"Failed","status":"True"}]}}`, true},
		{"running job", jobs, `{"status":{"active":1,"conditions":[{"type":"Suspended","status":"False"}]}}`, false},
		{"job backed up before it started", jobs, `{}`, false},
		{"succeeded pod", pods, `{"status":{"phase":"Succeeded"}}`, true},
		{"failed pod", pods, `{"status":{"phase":"Failed"}}`, true},
		{"running pod", pods, `{"status":{"phase":"Running"}}`, false},
		{"a malformed status", pods, `{"status":"Succeeded"}`, false},
	} {
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(tc.obj), &obj.Object); err != nil {
			t.Fatal(err)
		}
		if got := leftOut(tc.gr, obj); (got != "") != tc.out {
			t.Errorf("%s: left out %q, want %v", tc.name, got, tc.out)
		}
	}
}
