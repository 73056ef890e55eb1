package install

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// NewUninstallCommand is `salvor uninstall`.
func NewUninstallCommand(k *kube.Options) *cobra.Command {
	var (
		force, waitGone bool
		timeout         time.Duration
	)
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove Salvor from a cluster, keeping its backups",
		Long: `Removes what salvor install made: the server's Deployment (first, and
waits until its pods are gone), Salvor's namespace with everything in it,
the server's ClusterRoles and bindings, and Salvor's CRDs with the roles
salvor-viewer, salvor-operator and salvor-metrics-reader — the last two only
when no other namespace holds Salvor's objects (another installation).

Backups are not deleted: their files and snapshots stay in their locations.
Before the CRDs go, the finalizer that would delete a Backup's files is
taken off every Backup in the namespace, so they go as objects only, and a
Salvor (or Velero) pointed at the same locations finds the backups again.
To delete backups, run salvor backup delete before uninstalling.

The namespace is left to the cluster's namespace controller to empty and
remove; with --wait the command returns only once it, the CRDs and the
roles are gone, so an install right after it starts afresh. Asks before it
starts unless --force.`,
		Example: "  salvor uninstall\n  salvor uninstall --namespace salvor --force --wait",
		Args:    cobra.NoArgs,
		RunE: k.WithClient(func(cmd *cobra.Command, _ []string, c client.Client) error {
			out := cmd.OutOrStdout()
			if !force && !output.Ask(cmd.InOrStdin(), out, fmt.Sprintf("Remove Salvor from namespace %s? Its backups stay in their locations.", k.Namespace)) {
				return fmt.Errorf("not uninstalled")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return Uninstall(ctx, c, k.Namespace, out, waitGone)
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "uninstall without asking")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "bound on the whole uninstall")
	cmd.Flags().BoolVar(&waitGone, "wait", false, "return once the namespace, the CRDs and the roles are gone, not only deleted (Velero's flag)")
	return cmd
}

// sharedRoles are the ClusterRoles every installation shares.
var sharedRoles = []string{"salvor-viewer", "salvor-operator", "salvor-metrics-reader", TenantRole}

// Uninstall removes the installation in namespace, keeping every backup's
// files: the server is stopped before anything of its goes, and the
// Backups lose the finalizer that deletes files before their CRD does.
func Uninstall(ctx context.Context, c client.Client, namespace string, out io.Writer, waitGone bool) error {
	locations := &salvorv1.BackupStorageLocationList{}
	if err := c.List(ctx, locations, client.InNamespace(namespace)); err != nil && !noKind(err) {
		return fmt.Errorf("reading the backup locations in %s: %w", namespace, err)
	}

	// An encrypted location's backups are readable only with its keys,
	// which are a Secret in the namespace about to go: one not saved
	// elsewhere yet stops the uninstall before anything changes.
	var keys []string
	for _, l := range locations.Items {
		if l.Spec.Encryption == nil {
			continue
		}
		name := l.Spec.Encryption.KeySecret.Name
		secret := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("reading the keys of encrypted location %s (Secret %s/%s): %w", l.Name, namespace, name, err)
		case secret.Annotations[salvorv1.KeyNotSavedAnnotation] != "":
			return fmt.Errorf("not uninstalled: the keys of encrypted location %s (Secret %s/%s) are not saved outside the cluster, and without them its backups cannot be read by anyone; "+
				"save a copy (kubectl get secret -n %s %s -o yaml), remove the annotation %s, and uninstall again", l.Name, namespace, name, namespace, name, salvorv1.KeyNotSavedAnnotation)
		}
		keys = append(keys, fmt.Sprintf("%s (Secret %s)", l.Name, name))
	}

	// The server first: nothing it does may race what follows.
	deployments := &appsv1.DeploymentList{}
	if err := c.List(ctx, deployments, client.InNamespace(namespace), serverLabels); err != nil {
		return fmt.Errorf("reading the server's Deployment in %s: %w", namespace, err)
	}
	for _, d := range deployments.Items {
		if err := c.Delete(ctx, &d); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Deployment %s/%s: %w", namespace, d.Name, err)
		}
		fmt.Fprintf(out, "Deployment %s/%s deleted.\n", namespace, d.Name)
	}
	if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		err := c.List(ctx, pods, client.InNamespace(namespace), serverLabels)
		return err == nil && len(pods.Items) == 0, err
	}); err != nil {
		return fmt.Errorf("waiting for the server's pods in %s to stop: %w", namespace, err)
	}

	backups := &salvorv1.BackupList{}
	if err := c.List(ctx, backups, client.InNamespace(namespace)); err != nil && !noKind(err) {
		return fmt.Errorf("reading the Backups in %s: %w", namespace, err)
	}
	for i := range backups.Items {
		b := &backups.Items[i]
		if !controllerutil.ContainsFinalizer(b, salvorv1.FilesFinalizer) {
			continue
		}
		patch := client.MergeFrom(b.DeepCopy())
		controllerutil.RemoveFinalizer(b, salvorv1.FilesFinalizer)
		if err := c.Patch(ctx, b, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("backup %s: taking off its finalizer, so its files stay: %w", b.Name, err)
		}
	}

	others, defs, err := otherInstallations(ctx, c, namespace)
	if err != nil {
		return err
	}
	cluster := []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "salvor-server-" + namespace}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "salvor-server-" + namespace}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "salvor-test-restores-" + namespace}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "salvor-test-restores-" + namespace}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "salvor-exec-hooks-" + namespace}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "salvor-exec-hooks-" + namespace}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "salvor-node-agent-" + namespace}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "salvor-node-agent-" + namespace}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "salvor-tenants-" + namespace}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "salvor-tenants-" + namespace}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
	}
	if len(others) == 0 {
		for _, r := range sharedRoles {
			cluster = append(cluster, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: r}})
		}
		cluster = append(cluster, requesterPolicies()...)
		for _, d := range defs {
			cluster = append(cluster, d)
		}
	}
	var deleted []client.Object
	for _, o := range cluster {
		gvk, err := apiutil.GVKForObject(o, c.Scheme())
		if err != nil {
			return err
		}
		// A cluster before 1.36 serves no MutatingAdmissionPolicy.
		err = c.Delete(ctx, o)
		if noKind(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("deleting %s %s: %w", gvk.Kind, o.GetName(), err)
		}
		fmt.Fprintf(out, "%s %s deleted.\n", gvk.Kind, o.GetName())
		deleted = append(deleted, o)
	}
	if waitGone {
		if err := gone(ctx, c, deleted, out); err != nil {
			return err
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(out, "Salvor's CRDs and the roles %s are kept: namespaces %s hold Salvor's objects too.\n", strings.Join(sharedRoles, ", "), strings.Join(others, ", "))
	}
	fmt.Fprintf(out, "Salvor is uninstalled from %s. No backup was deleted", namespace)
	if len(locations.Items) > 0 {
		var where []string
		for _, l := range locations.Items {
			where = append(where, fmt.Sprintf("%s (%s %s/%s)", l.Name, l.Spec.Provider, l.Spec.ObjectStorage.Bucket, l.Spec.ObjectStorage.Prefix))
		}
		fmt.Fprintf(out, ": each stays in its location, for a Salvor or Velero pointed there to find again: %s", strings.Join(where, ", "))
	}
	fmt.Fprintln(out, ".")
	if len(keys) > 0 {
		fmt.Fprintf(out, "The keys of the encrypted locations %s went with the namespace: their backups are readable only with the copies you saved.\n", strings.Join(keys, ", "))
	}
	return nil
}

// gone waits until each object is gone from the API server: a namespace
// once the namespace controller has emptied it, a CRD once its objects are.
func gone(ctx context.Context, c client.Client, objs []client.Object, out io.Writer) error {
	for _, o := range objs {
		gvk, err := apiutil.GVKForObject(o, c.Scheme())
		if err != nil {
			return err
		}
		if err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(o), o)
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}); err != nil {
			why := ""
			if ns, ok := o.(*corev1.Namespace); ok {
				// The namespace controller says what it is stuck on.
				why = " (the cluster's namespace controller empties it"
				for _, cond := range ns.Status.Conditions {
					if cond.Status == corev1.ConditionTrue {
						why += "; " + cond.Message
					}
				}
				why += ")"
			}
			return fmt.Errorf("waiting for %s %s to be gone%s: %w", gvk.Kind, o.GetName(), why, err)
		}
		fmt.Fprintf(out, "%s %s is gone.\n", gvk.Kind, o.GetName())
	}
	return nil
}

// transient are the kinds of requests a CLI leaves for a server, which
// mark no installation: one run against a namespace without Salvor stays.
var transient = map[string]bool{"DownloadRequest": true, "ServerStatusRequest": true}

// otherInstallations names the namespaces other than namespace that hold
// objects of Salvor's kinds, and returns Salvor's CRDs.
func otherInstallations(ctx context.Context, c client.Client, namespace string) ([]string, []*unstructured.Unstructured, error) {
	defs, err := crds()
	if err != nil {
		return nil, nil, err
	}
	others := map[string]bool{}
	for _, d := range defs {
		kind, _, _ := unstructured.NestedString(d.Object, "spec", "names", "kind")
		if transient[kind] {
			continue
		}
		list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: salvorv1.GroupVersion.String(), Kind: kind + "List"}}
		if err := c.List(ctx, list); err != nil {
			if noKind(err) {
				continue
			}
			return nil, nil, fmt.Errorf("reading the %s objects of every namespace: %w", kind, err)
		}
		for _, o := range list.Items {
			if o.Namespace != namespace {
				others[o.Namespace] = true
			}
		}
	}
	names := make([]string, 0, len(others))
	for n := range others {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, defs, nil
}

// noKind tells that the cluster does not serve a kind (its CRD is gone
// already, or was never installed).
func noKind(err error) bool {
	return apierrors.IsNotFound(err) || meta.IsNoMatchError(err)
}
