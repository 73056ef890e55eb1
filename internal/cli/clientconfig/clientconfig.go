package clientconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The keys a client config holds: Velero's names.
const (
	Namespace = "namespace"
	CACert    = "cacert"
)

// keys are the known keys and what each sets.
var keys = map[string]string{
	Namespace: "the namespace Salvor runs in, when --namespace is not given (before it: $SALVOR_NAMESPACE)",
	CACert:    "a PEM file of CAs to trust for downloads from object storage, when --cacert is not given",
}

// refused are Velero's keys that mean nothing here.
var refused = map[string]string{
	"features":  "Salvor has no feature flags",
	"colorized": "Salvor's output has no colours",
}

// Path is the file: salvor/config.json in the user's config directory
// ($XDG_CONFIG_HOME or ~/.config on Linux), or $SALVOR_CONFIG.
func Path() (string, error) {
	if p := os.Getenv("SALVOR_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "salvor", "config.json"), nil
}

// Load reads the client config; no file (or no config directory, as in
// a server's pod) is an empty one.
func Load() (map[string]string, error) {
	path, err := Path()
	if err != nil {
		return map[string]string{}, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the client config: %w", err)
	}
	c := map[string]string{}
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, &brokenError{path, err}
	}
	return c, nil
}

// brokenError is a client config file that is not one: set rewrites it.
type brokenError struct {
	path string
	err  error
}

func (e *brokenError) Error() string {
	return fmt.Sprintf("the client config %s is not a JSON object of strings (%v): salvor client config set KEY=VALUE rewrites it", e.path, e.err)
}

// Get is one key of the client config ("" when unset).
func Get(key string) (string, error) {
	c, err := Load()
	return c[key], err
}

func save(c map[string]string) (string, error) {
	path, err := Path()
	if err != nil {
		return "", fmt.Errorf("where to keep the client config: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	// Written beside and renamed: a failed write leaves the old file.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}

// NewCommand is `salvor client`, with `config get` and `config set`.
func NewCommand() *cobra.Command {
	var known []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		known = append(known, "  "+k+": "+keys[k])
	}
	config := &cobra.Command{
		Use:   "config",
		Short: "Show or change the CLI's settings file",
		Long: "The CLI's settings, kept in salvor/config.json in your config directory\n" +
			"(or $SALVOR_CONFIG). The keys:\n" + strings.Join(known, "\n"),
	}
	config.AddCommand(&cobra.Command{
		Use:     "get [KEY...]",
		Short:   "Print the client config (or the keys named)",
		Example: "  salvor client config get\n  salvor client config get namespace",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := Load()
			if err != nil {
				return err
			}
			if len(args) == 0 {
				for _, k := range slices.Sorted(maps.Keys(c)) {
					if _, ok := keys[k]; ok {
						args = append(args, k)
					}
				}
			}
			for _, k := range args {
				if _, ok := keys[k]; !ok {
					return unknown(k)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", k, c[k])
			}
			return nil
		},
	})
	config.AddCommand(&cobra.Command{
		Use:     "set KEY=VALUE...",
		Short:   "Set keys of the client config (an empty VALUE removes the key)",
		Example: "  salvor client config set namespace=backup-system\n  salvor client config set cacert=$HOME/ca.pem\n  salvor client config set namespace=",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := Load()
			var broken *brokenError
			if errors.As(err, &broken) {
				c = map[string]string{} // rewritten whole, as its error said
			} else if err != nil {
				return err
			}
			if c, err = set(c, args); err != nil {
				return err
			}
			path, err := save(c)
			if err != nil {
				return fmt.Errorf("writing the client config: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Client config %s saved.\n", path)
			return nil
		},
	})
	client := &cobra.Command{Use: "client", Short: "The CLI's own settings (Velero's command)",
		// Not the root's, which reads the client config for the namespace:
		// a broken file must not stop the command that mends it.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil }}
	client.AddCommand(config)
	return client
}

// set is c with KEY=VALUE arguments applied (c itself is not changed):
// an empty VALUE removes the key, a cacert is made absolute and must
// exist.
func set(c map[string]string, args []string) (map[string]string, error) {
	changed := maps.Clone(c)
	if changed == nil {
		changed = map[string]string{}
	}
	for _, arg := range args {
		k, v, ok := strings.Cut(arg, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want KEY=VALUE", arg)
		}
		if _, known := keys[k]; !known {
			return nil, unknown(k)
		}
		if errs := validation.IsDNS1123Label(v); k == Namespace && v != "" && len(errs) > 0 {
			return nil, fmt.Errorf("namespace %q: %s", v, strings.Join(errs, "; "))
		}
		if k == CACert && v != "" {
			abs, err := filepath.Abs(v)
			if err != nil {
				return nil, fmt.Errorf("cacert %s: %w", v, err)
			}
			if _, err := os.Stat(abs); err != nil {
				return nil, fmt.Errorf("cacert: %w", err)
			}
			v = abs
		}
		if v == "" {
			delete(changed, k)
		} else {
			changed[k] = v
		}
	}
	return changed, nil
}

func unknown(k string) error {
	if why, ok := refused[k]; ok {
		return fmt.Errorf("%s is Velero's: %s", k, why)
	}
	return fmt.Errorf("no client config key %q: the keys are %s", k, strings.Join(slices.Sorted(maps.Keys(keys)), ", "))
}
