package snapshotlocation

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/get"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// NewCommand returns `salvor snapshot-location`.
func NewCommand(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{Use: "snapshot-location", Aliases: []string{"snapshot-locations", "vsl"}, Short: "Work with volume snapshot locations"}
	cmd.AddCommand(newCreate(k), newGet(k))
	return cmd
}

func newCreate(k *kube.Options) *cobra.Command {
	var (
		provider  string
		config    map[string]string
		isDefault bool
	)
	cmd := &cobra.Command{
		Use:     "create NAME --provider P",
		Short:   "Create a volume snapshot location",
		Example: "  salvor snapshot-location create local --provider salvor.dev/local-volume --config snapshotDir=/var/lib/salvor/snapshots --default",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if provider == "" {
				return fmt.Errorf("--provider is required: the VolumeSnapshotter plugin, e.g. salvor.dev/local-volume")
			}
			c, err := k.Client()
			if err != nil {
				return err
			}
			if isDefault {
				list := &salvorv1.VolumeSnapshotLocationList{}
				if err := c.List(cmd.Context(), list, client.InNamespace(k.Namespace)); err != nil {
					return err
				}
				for i := range list.Items {
					if list.Items[i].Spec.Default {
						list.Items[i].Spec.Default = false
						if err := c.Update(cmd.Context(), &list.Items[i]); err != nil {
							return err
						}
					}
				}
			}
			vsl := &salvorv1.VolumeSnapshotLocation{
				ObjectMeta: metav1.ObjectMeta{Name: args[0], Namespace: k.Namespace},
				Spec:       salvorv1.VolumeSnapshotLocationSpec{Provider: provider, Config: config, Default: isDefault},
			}
			if err := c.Create(cmd.Context(), vsl); err != nil {
				return fmt.Errorf("creating volume snapshot location %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Volume snapshot location %q created.\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&provider, "provider", "", "VolumeSnapshotter plugin")
	cmd.Flags().StringToStringVar(&config, "config", nil, "plugin config as key=value pairs, comma-separated")
	cmd.Flags().BoolVar(&isDefault, "default", false, "use this location for backups that name none")
	return cmd
}

func newGet(k *kube.Options) *cobra.Command {
	return get.Command[salvorv1.VolumeSnapshotLocation](k, "volumesnapshotlocation", "List volume snapshot locations",
		"  salvor snapshot-location get\n  salvor snapshot-location get default -o yaml",
		&salvorv1.VolumeSnapshotLocationList{}, get.Table[salvorv1.VolumeSnapshotLocation]{
			Header: []string{"NAME", "PROVIDER", "DEFAULT"},
			Row: func(v *salvorv1.VolumeSnapshotLocation) []string {
				def := ""
				if v.Spec.Default {
					def = "true"
				}
				return []string{v.Name, v.Spec.Provider, def}
			},
			WideHeader: []string{"CONFIG"},
			WideRow: func(v *salvorv1.VolumeSnapshotLocation) []string {
				config := make([]string, 0, len(v.Spec.Config))
				for k, val := range v.Spec.Config {
					config = append(config, k+"="+val)
				}
				sort.Strings(config)
				return []string{output.Or(strings.Join(config, ","), "-")}
			},
		})
}
