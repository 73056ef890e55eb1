package debug

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Runner runs a salvor command line against the cluster and namespace
// the debug command was given, and returns what it printed.
type Runner func(ctx context.Context, args ...string) (string, error)

// part is one file of the bundle, or why it could not be made.
type part struct {
	name string
	data []byte
	err  error
}

// NewCommand returns `salvor debug`.
func NewCommand(k *kube.Options, run Runner) *cobra.Command {
	var (
		backups, restores []string
		out               string
		verbose           bool
		timeout           time.Duration
	)
	cmd := &cobra.Command{
		Use:   "debug",
		Short: "Collect what helps debug Salvor into one tar.gz",
		Long: `Collects into one tar.gz: the CLI's and the server's versions and plugins,
Salvor's objects in its namespace (backups, restores, schedules, locations,
volume progress), the server's Deployment, pods, events and logs, and for
each --backup and --restore its description (--details) and log.

It holds no Secret, but object storage settings and item names are in it:
share it as you would the cluster's configuration. A part that cannot be
collected (say, pod logs without the right to read them) is named in
errors.txt; the rest is still written.`,
		Example: "  salvor debug --backup nightly-20261120\n  salvor debug --restore r1 --output /tmp/salvor-debug.tar.gz",
		Args:    cobra.NoArgs,
		RunE: k.WithClient(func(cmd *cobra.Command, _ []string, c client.Client) error {
			for _, name := range append(append([]string{}, backups...), restores...) {
				if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
					return fmt.Errorf("%q is not a backup or restore name: %s", name, strings.Join(errs, "; "))
				}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if out == "" {
				out = "bundle-" + time.Now().UTC().Format("2006-01-02-15-04-05") + ".tar.gz"
			}
			progress := io.Discard
			if verbose {
				progress = cmd.ErrOrStderr()
			}
			var parts []part
			add := func(name string, data []byte, err error) {
				fmt.Fprintf(progress, "collected %s\n", name)
				parts = append(parts, part{name, data, err})
			}
			command := func(name string, args ...string) {
				text, err := run(ctx, args...)
				if err != nil {
					err = fmt.Errorf("salvor %s: %w", strings.Join(args, " "), err)
				}
				add(name, []byte(text), err)
			}
			command("version.txt", "version")
			command("plugins.txt", "plugin", "get")
			for _, noun := range []string{"backup", "restore", "schedule", "backup-location", "snapshot-location"} {
				command("resources/"+noun+"s.yaml", noun, "get", "-o", "yaml")
			}
			for file, list := range map[string]client.ObjectList{
				"resources/volumepluginbackups.yaml":  &salvorv1.VolumePluginBackupList{},
				"resources/volumepluginrestores.yaml": &salvorv1.VolumePluginRestoreList{},
				"server/deployments.yaml":             &appsv1.DeploymentList{},
				"server/pods.yaml":                    &corev1.PodList{},
				"server/events.yaml":                  &corev1.EventList{},
			} {
				err := c.List(ctx, list, client.InNamespace(k.Namespace))
				data, merr := yaml.Marshal(list)
				if err == nil {
					err = merr
				}
				add(file, data, err)
			}
			logs(ctx, k, add)
			for _, b := range backups {
				command("backups/"+b+"/describe.txt", "backup", "describe", b, "--details")
				command("backups/"+b+"/log.jsonl", "backup", "logs", b)
			}
			for _, r := range restores {
				command("restores/"+r+"/describe.txt", "restore", "describe", r, "--details")
				command("restores/"+r+"/log.jsonl", "restore", "logs", r)
			}
			failed, err := write(out, parts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Debug bundle %s written.\n", out)
			if failed > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%d parts could not be collected: errors.txt in the bundle says why.\n", failed)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringSliceVar(&backups, "backup", nil, "a backup whose description and log to collect (repeat or comma-separate for more)")
	f.StringSliceVar(&restores, "restore", nil, "a restore whose description and log to collect (repeat or comma-separate for more)")
	f.StringVarP(&out, "output", "o", "", "the bundle to write (default: bundle-YYYY-MM-DD-HH-MM-SS.tar.gz)")
	f.BoolVar(&verbose, "verbose", false, "name each part as it is collected")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "bound on the whole collection")
	return cmd
}

// logs adds the log of each container of the server's pods (and, where
// one restarted, its previous run's).
func logs(ctx context.Context, k *kube.Options, add func(string, []byte, error)) {
	cfg, err := k.RESTConfig()
	if err != nil {
		add("server/logs", nil, err)
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		add("server/logs", nil, err)
		return
	}
	pods, err := cs.CoreV1().Pods(k.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=salvor,app.kubernetes.io/component=server"})
	if err != nil {
		add("server/logs", nil, fmt.Errorf("listing the server's pods: %w", err))
		return
	}
	if len(pods.Items) == 0 {
		add("server/logs/none.txt", []byte(fmt.Sprintf("No server pods in namespace %s.\n", k.Namespace)), nil)
	}
	for _, p := range pods.Items {
		for _, st := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			runs := []bool{false}
			if st.RestartCount > 0 {
				runs = append(runs, true)
			}
			for _, previous := range runs {
				name := "server/logs/" + p.Name + "/" + st.Name + ".log"
				if previous {
					name = "server/logs/" + p.Name + "/" + st.Name + ".previous.log"
				}
				data, err := cs.CoreV1().Pods(k.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: st.Name, Previous: previous}).DoRaw(ctx)
				if err != nil {
					err = fmt.Errorf("the log of pod %s container %s: %w", p.Name, st.Name, err)
				}
				add(name, data, err)
			}
		}
	}
}

// write makes the bundle: each part under salvor-debug/, and errors.txt
// naming the parts that failed. It is written beside out and renamed into
// place, readable by its owner only.
func write(out string, parts []part) (failed int, err error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	now := time.Now()
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: "salvor-debug/" + name, Mode: 0o600, Size: int64(len(data)), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	var errs strings.Builder
	for _, p := range parts {
		if p.err != nil {
			failed++
			fmt.Fprintf(&errs, "%s: %v\n", p.name, p.err)
			if len(p.data) == 0 {
				continue
			}
		}
		if err := put(p.name, p.data); err != nil {
			return 0, err
		}
	}
	if errs.Len() > 0 {
		if err := put("errors.txt", []byte(errs.String())); err != nil {
			return 0, err
		}
	}
	if err := tw.Close(); err != nil {
		return 0, err
	}
	if err := gz.Close(); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return 0, err
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	return failed, os.Rename(tmp.Name(), out)
}
