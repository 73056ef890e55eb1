package selfservice

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Requester is who made a tenant's object, as the API server recorded it.
type Requester struct {
	User   string
	Groups []string
}

func (r Requester) String() string { return r.User }

// requesterOf reads the requester the salvor-requester admission policy
// wrote on obj.
func requesterOf(obj client.Object) (Requester, error) {
	a := obj.GetAnnotations()
	user := a[salvorv1.RequestedByAnnotation]
	if user == "" {
		return Requester{}, fmt.Errorf("it records no requester (annotation %s): the admission policy salvor-requester, which salvor install --tenants installs, writes it as the object is created; without it the server cannot tell whose rights to act with", salvorv1.RequestedByAnnotation)
	}
	var groups []string
	for _, g := range strings.Split(a[salvorv1.RequestedByGroupsAnnotation], "\n") {
		if g != "" {
			groups = append(groups, g)
		}
	}
	return Requester{User: user, Groups: groups}, nil
}

// access asks the API server what a requester may do.
type access struct {
	client client.Client
}

// can tells whether r may do what attrs say.
func (a access) can(ctx context.Context, r Requester, attrs authorizationv1.ResourceAttributes) (bool, error) {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: r.User, Groups: r.Groups, ResourceAttributes: &attrs}}
	if err := a.client.Create(ctx, review); err != nil {
		return false, fmt.Errorf("asking whether %s may %s %s in %s: %w", r.User, attrs.Verb, resourceText(attrs), attrs.Namespace, err)
	}
	return review.Status.Allowed, nil
}

// denied is, of served, the resources r may not verb in namespace, in the
// order given.
func (a access) denied(ctx context.Context, r Requester, verb, namespace string, served []resources.Resource) ([]resources.Resource, error) {
	var out []resources.Resource
	for _, res := range served {
		ok, err := a.can(ctx, r, authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: res.GVR.Group, Resource: res.GVR.Resource})
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, res)
		}
	}
	return out, nil
}

// names are resources as kubectl and a backup's filters name them:
// resource.group, or resource for the core group.
func names(list []resources.Resource) []string {
	out := make([]string, len(list))
	for i, r := range list {
		out[i] = resourceText(authorizationv1.ResourceAttributes{Group: r.GVR.Group, Resource: r.GVR.Resource})
	}
	return out
}

// explicit is a resource filter without its "*": the names a spec gives.
func explicit(filter []string) []string {
	return slices.DeleteFunc(slices.Clone(filter), func(n string) bool { return n == "*" })
}

// followStatus copies a mirror's status (from) to its tenant object's
// (to) once the mirror has one (ready), telling whether it changed.
func followStatus[S any](from, to *S, ready bool) bool {
	if !ready || equality.Semantic.DeepEqual(*from, *to) {
		return false
	}
	*to = *from
	return true
}

// resourceText is a resource as kubectl and a backup's filters name it:
// resource.group, or resource for the core group.
func resourceText(attrs authorizationv1.ResourceAttributes) string {
	if attrs.Group == "" {
		return attrs.Resource
	}
	return attrs.Resource + "." + attrs.Group
}
