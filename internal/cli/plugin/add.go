package plugin

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/install"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
)

// A plugin image is an init container of the server's Deployment that
// copies its binaries into the plugin directory (install --plugins makes
// them); add and remove change that list, as Velero's plugin add and
// remove do, and the server's pod restarts with it.

func newAddCommand(k *kube.Options) *cobra.Command {
	var (
		pull    string
		confirm bool
	)
	cmd := &cobra.Command{
		Use:   "add IMAGE",
		Short: "Add a plugin image to the server (its pod restarts)",
		Long: `Adds IMAGE to the server's Deployment as an init container that copies
its plugin binaries into the plugin directory, as salvor install --plugins
does. The server's pod restarts to load them: backups and restores running
then are interrupted. Asks first on a terminal, unless --confirm.`,
		Example: "  salvor plugin add velero/velero-plugin-for-aws:v1.14.3\n  salvor plugin add example.io/my-plugins:v2 --image-pull-policy Always --confirm",
		Args:    cobra.ExactArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			image := args[0]
			switch corev1.PullPolicy(pull) {
			case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
			default:
				return fmt.Errorf("--image-pull-policy %q: want Always, IfNotPresent or Never", pull)
			}
			d, err := install.ServerDeployment(cmd.Context(), c, k.Namespace)
			if err != nil {
				return err
			}
			inits := d.Spec.Template.Spec.InitContainers
			if i := slices.IndexFunc(inits, func(c corev1.Container) bool { return c.Image == image }); i >= 0 {
				return fmt.Errorf("plugin image %s is already in Deployment %s/%s (init container %s)", image, d.Namespace, d.Name, inits[i].Name)
			}
			if !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "plugins" }) {
				return fmt.Errorf("the server's Deployment %s/%s has no volume plugins for plugin binaries: reinstall with salvor install --plugins %s", d.Namespace, d.Name, image)
			}
			name := freeName(inits)
			if !output.Confirmed(cmd.InOrStdin(), cmd.OutOrStdout(), confirm,
				fmt.Sprintf("Add plugin image %s to Deployment %s/%s? The server restarts, interrupting running backups and restores.", image, d.Namespace, d.Name)) {
				return fmt.Errorf("plugin image %s not added", image)
			}
			if err := kube.Patch(cmd.Context(), c, d, func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.InitContainers = append(d.Spec.Template.Spec.InitContainers, install.PluginContainer(name, image, corev1.PullPolicy(pull)))
			}); err != nil {
				return fmt.Errorf("adding plugin image %s to Deployment %s/%s: %w", image, d.Namespace, d.Name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Plugin image %s added to Deployment %s/%s (init container %s). Once the server is back, salvor plugin get lists its plugins.\n",
				image, d.Namespace, d.Name, name)
			return nil
		}),
	}
	cmd.Flags().StringVar(&pull, "image-pull-policy", string(corev1.PullIfNotPresent), "when the node pulls the image: Always, IfNotPresent or Never")
	cmd.Flags().BoolVar(&confirm, "confirm", false, "add without asking")
	return cmd
}

func newRemoveCommand(k *kube.Options) *cobra.Command {
	var confirm bool
	cmd := &cobra.Command{
		Use:   "remove IMAGE|CONTAINER",
		Short: "Remove a plugin image from the server (its pod restarts)",
		Long: `Removes a plugin image, given by its image or its init container's name,
from the server's Deployment. The server's pod restarts without its plugins:
backups and restores running then are interrupted, and backups made with
them are restored only once they are back. Asks first on a terminal, unless
--confirm.`,
		Example: "  salvor plugin remove velero/velero-plugin-for-aws:v1.14.3\n  salvor plugin remove plugin-1 --confirm",
		Args:    cobra.ExactArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			d, err := install.ServerDeployment(cmd.Context(), c, k.Namespace)
			if err != nil {
				return err
			}
			inits := d.Spec.Template.Spec.InitContainers
			i := slices.IndexFunc(inits, func(c corev1.Container) bool { return c.Image == args[0] || c.Name == args[0] })
			if i < 0 {
				var have []string
				for _, c := range inits {
					have = append(have, c.Name+" ("+c.Image+")")
				}
				return fmt.Errorf("no plugin image or init container %s in Deployment %s/%s; it has %s", args[0], d.Namespace, d.Name, output.Or(strings.Join(have, ", "), "none"))
			}
			gone := inits[i]
			if !output.Confirmed(cmd.InOrStdin(), cmd.OutOrStdout(), confirm,
				fmt.Sprintf("Remove plugin image %s from Deployment %s/%s? The server restarts, interrupting running backups and restores.", gone.Image, d.Namespace, d.Name)) {
				return fmt.Errorf("plugin image %s not removed", gone.Image)
			}
			if err := kube.Patch(cmd.Context(), c, d, func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.InitContainers = slices.DeleteFunc(d.Spec.Template.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == gone.Name })
			}); err != nil {
				return fmt.Errorf("removing plugin image %s from Deployment %s/%s: %w", gone.Image, d.Namespace, d.Name, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Plugin image %s removed from Deployment %s/%s (init container %s).\n", gone.Image, d.Namespace, d.Name, gone.Name)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&confirm, "confirm", false, "remove without asking")
	return cmd
}

// freeName is the first plugin-N no init container is named.
func freeName(inits []corev1.Container) string {
	for n := 0; ; n++ {
		name := fmt.Sprintf("plugin-%d", n)
		if !slices.ContainsFunc(inits, func(c corev1.Container) bool { return c.Name == name }) {
			return name
		}
	}
}
