package schedule

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/backup"
	"github.com/salvor-dev/salvor/internal/cli/get"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	"github.com/salvor-dev/salvor/internal/retention"
	"github.com/salvor-dev/salvor/internal/schedule"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// NewCommand returns `salvor schedule` and its verbs.
func NewCommand(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "schedule",
		Aliases: []string{"schedules"},
		Short:   "Work with schedules: backups made at set times, and how many to keep",
	}
	cmd.AddCommand(newCreate(k), newGet(k), newDescribe(k), newPause(k, true), newPause(k, false), newDelete(k))
	return cmd
}

type createOptions struct {
	backup.SpecFlags
	schedule                                                 string
	paused, skipImmediately, ownerReferences                 bool
	concurrency                                              string
	jitter, startingDeadline                                 time.Duration
	keepLast, keepHourly, keepDaily, keepWeekly, keepMonthly int
	keepYearly, keepFailed                                   int
	verifyEvery                                              int
	verifyPrefix                                             string
	format                                                   output.Format
}

func newCreate(k *kube.Options) *cobra.Command {
	o := &createOptions{}
	cmd := &cobra.Command{
		Use:   "create NAME --schedule EXPR",
		Short: "Create a schedule",
		Long: `Creates a schedule: a backup of the given spec at every time EXPR gives,
named NAME-YYYYMMDDhhmmss (UTC). EXPR is a cron expression of five fields,
a macro (@hourly, @daily, @weekly, @monthly, @yearly) or "@every DURATION",
optionally prefixed by "CRON_TZ=ZONE " (the default zone is UTC).

A new schedule backs up at once unless --skip-immediately is given. With
any --keep flag the schedule deletes the backups no rule keeps; it never
deletes its newest Completed backup. See docs/schedules.md.`,
		Example: `  salvor schedule create nightly --schedule "CRON_TZ=Europe/Paris 0 2 * * *" --include-namespaces app \
    --keep-daily 7 --keep-weekly 4 --keep-monthly 12 --keep-failed 2
  salvor schedule create often --schedule "@every 15m" --keep-last 4 --skip-immediately`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := o.object(cmd, args[0], k.Namespace)
			if err != nil {
				return err
			}
			velero, err := o.VeleroFields()
			if err != nil {
				return err
			}
			c, err := k.Client()
			if err != nil {
				return err
			}
			if printed, err := kube.Print(cmd.OutOrStdout(), c, o.format, s, velero, "spec", "template"); printed || err != nil {
				return err
			}
			if err := kube.CreateWith(cmd.Context(), c, s, velero, "spec", "template"); err != nil {
				return fmt.Errorf("creating schedule %s: %w", args[0], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Schedule %q created. Run `salvor schedule describe %s` to see its next runs.\n", args[0], args[0])
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.schedule, "schedule", "", `when to back up: "0 2 * * *", "@daily", "@every 6h", optionally "CRON_TZ=Europe/Paris 0 2 * * *" (required)`)
	o.AddFlags(f)
	f.BoolVar(&o.paused, "paused", false, "create the schedule paused")
	kube.AddPrintFlag(f, &o.format)
	f.BoolVar(&o.skipImmediately, "skip-immediately", false, "on creation and unpause, wait for the next scheduled time instead of backing up at once (=false backs up at once even where the server runs with --schedule-skip-immediately)")
	f.BoolVar(&o.ownerReferences, "use-owner-references-in-backup", false, "make the schedule own its backups: deleting it deletes them")
	f.StringVar(&o.concurrency, "concurrency-policy", "", "when a run is due while a backup of the schedule is unfinished: Forbid (skip the run; default), Allow, or Replace (cancel the unfinished one)")
	f.DurationVar(&o.jitter, "jitter", 0, "delay every run by a fixed random duration up to this")
	f.DurationVar(&o.startingDeadline, "starting-deadline", 0, "after the server was down, make the one catch-up run only if it is at most this late (default: always)")
	f.IntVar(&o.keepLast, "keep-last", 0, "keep the newest N Completed backups")
	f.IntVar(&o.keepHourly, "keep-hourly", 0, "keep the newest Completed backup of each of the last N hours")
	f.IntVar(&o.keepDaily, "keep-daily", 0, "keep the newest Completed backup of each of the last N days")
	f.IntVar(&o.keepWeekly, "keep-weekly", 0, "keep the newest Completed backup of each of the last N weeks")
	f.IntVar(&o.keepMonthly, "keep-monthly", 0, "keep the newest Completed backup of each of the last N months")
	f.IntVar(&o.keepYearly, "keep-yearly", 0, "keep the newest Completed backup of each of the last N years")
	f.IntVar(&o.keepFailed, "keep-failed", 0, "keep the newest N failed or partially failed backups (default: their TTL decides)")
	f.IntVar(&o.verifyEvery, "verify-every", 0, "verify the schedule's first backup and every Nth after it once it ends, as salvor backup verify does (0: none)")
	f.StringVar(&o.verifyPrefix, "verify-restore-into-prefix", "", "with --verify-every: also test-restore each verified backup into namespaces named PREFIX-<namespace>, compare and delete them")
	return cmd
}

func (o *createOptions) object(cmd *cobra.Command, name, namespace string) (*salvorv1.Schedule, error) {
	if o.schedule == "" {
		return nil, fmt.Errorf(`--schedule is required: for example --schedule "0 2 * * *" or --schedule @daily`)
	}
	if _, err := schedule.Parse(o.schedule); err != nil {
		return nil, fmt.Errorf("--schedule: %w", err)
	}
	spec, err := o.Spec()
	if err != nil {
		return nil, err
	}
	s := &salvorv1.Schedule{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: o.Labels, Annotations: o.Annotations},
		Spec: salvorv1.ScheduleSpec{
			Schedule: o.schedule, Template: spec, Paused: o.paused,
			ConcurrencyPolicy: salvorv1.ConcurrencyPolicy(o.concurrency),
			Jitter:            metav1.Duration{Duration: o.jitter},
			StartingDeadline:  metav1.Duration{Duration: o.startingDeadline},
		},
	}
	switch s.Spec.ConcurrencyPolicy {
	case "", salvorv1.ConcurrencyForbid, salvorv1.ConcurrencyAllow, salvorv1.ConcurrencyReplace:
	default:
		return nil, fmt.Errorf("--concurrency-policy %q: must be Forbid, Allow or Replace", o.concurrency)
	}
	f := cmd.Flags()
	if f.Changed("skip-immediately") {
		// false too: it overrides the server's --schedule-skip-immediately.
		s.Spec.SkipImmediately = &o.skipImmediately
	}
	if o.ownerReferences {
		s.Spec.UseOwnerReferencesInBackup = &o.ownerReferences
	}
	switch {
	case o.verifyEvery < 0:
		return nil, fmt.Errorf("--verify-every %d: must not be negative", o.verifyEvery)
	case o.verifyPrefix != "" && o.verifyEvery == 0:
		return nil, fmt.Errorf("--verify-restore-into-prefix needs --verify-every (1 verifies every backup)")
	case o.verifyEvery > 0:
		s.Spec.Verify = &salvorv1.ScheduleVerify{Every: o.verifyEvery, RestoreIntoPrefix: o.verifyPrefix}
	}
	keeps := map[string]*int{"keep-last": &o.keepLast, "keep-hourly": &o.keepHourly, "keep-daily": &o.keepDaily, "keep-weekly": &o.keepWeekly,
		"keep-monthly": &o.keepMonthly, "keep-yearly": &o.keepYearly, "keep-failed": &o.keepFailed}
	any := false
	for flag, n := range keeps {
		if *n < 0 {
			return nil, fmt.Errorf("--%s %d: must not be negative", flag, *n)
		}
		any = any || f.Changed(flag)
	}
	if any {
		s.Spec.Retention = &salvorv1.Retention{KeepLast: o.keepLast, Hourly: o.keepHourly, Daily: o.keepDaily,
			Weekly: o.keepWeekly, Monthly: o.keepMonthly, Yearly: o.keepYearly}
		if f.Changed("keep-failed") {
			s.Spec.Retention.KeepFailed = &o.keepFailed
		}
	}
	return s, nil
}

func newGet(k *kube.Options) *cobra.Command {
	return get.Command[salvorv1.Schedule](k, "schedule", "List schedules", "  salvor schedule get\n  salvor schedule get nightly -o yaml",
		&salvorv1.ScheduleList{}, get.Table[salvorv1.Schedule]{
			Header: []string{"NAME", "STATUS", "SCHEDULE", "PAUSED", "LAST BACKUP", "NEXT RUN", "SKIPPED", "RETENTION"},
			Row: func(s *salvorv1.Schedule) []string {
				return []string{s.Name, phase(*s), s.Spec.Schedule, fmt.Sprint(s.Spec.Paused), output.Or(s.Status.LastBackupName, "-"),
					output.Time(s.Status.NextRun), fmt.Sprint(s.Status.SkippedRuns), retentionText(s.Spec.Retention)}
			},
			WideHeader: []string{"CONCURRENCY", "JITTER", "NAMESPACES", "LOCATION", "LAST SKIP REASON"},
			WideRow: func(s *salvorv1.Schedule) []string {
				policy := string(s.Spec.ConcurrencyPolicy)
				if policy == "" {
					policy = string(salvorv1.ConcurrencyForbid)
				}
				return []string{policy, s.Spec.Jitter.Duration.String(), output.Filter(s.Spec.Template.IncludedNamespaces, s.Spec.Template.ExcludedNamespaces),
					orDefault(s.Spec.Template.StorageLocation), output.Or(s.Status.LastSkipReason, "-")}
			},
		})
}

func newPause(k *kube.Options, pause bool) *cobra.Command {
	verb, did := "pause", "paused"
	short := "Stop schedules from running"
	if !pause {
		verb, did = "unpause", "unpaused"
		short = "Let paused schedules run again (at once, unless they skip immediately)"
	}
	var skip bool
	cmd := &cobra.Command{
		Use:     verb + " NAME...",
		Short:   short,
		Example: "  salvor schedule " + verb + " nightly\n  salvor schedule " + verb + " --selector team=a --skip-immediately",
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			setSkip := cmd.Flags().Changed("skip-immediately")
			return kube.Each(cmd.Context(), c, k.Namespace, "schedule", args, func(s *salvorv1.Schedule) error {
				if err := kube.Patch(cmd.Context(), c, s, func(s *salvorv1.Schedule) {
					s.Spec.Paused = pause
					if setSkip {
						s.Spec.SkipImmediately = &skip
					}
				}); err != nil {
					return fmt.Errorf("%s schedule %s: %w", verb, s.Name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Schedule %q %s.\n", s.Name, did)
				return nil
			})
		}),
	}
	cmd.Flags().BoolVar(&skip, "skip-immediately", false, "also set the schedules' spec.skipImmediately: when unpaused, wait for the next scheduled time instead of backing up at once (Velero's flag)")
	return kube.Chooses(cmd, k, "schedule", &salvorv1.ScheduleList{}, nil)
}

func newDelete(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete schedules (their backups stay, unless the schedule owns them)",
		Long: `Deletes each schedule. Its backups stay and expire by their TTL, unless the
schedule was created with --use-owner-references-in-backup: then they are
deleted with it, files and all.`,
		Example: "  salvor schedule delete nightly",
		Args:    cobra.MinimumNArgs(1),
		RunE: k.WithClient(func(cmd *cobra.Command, args []string, c client.Client) error {
			return kube.Each(cmd.Context(), c, k.Namespace, "schedule", args, func(s *salvorv1.Schedule) error {
				if err := c.Delete(cmd.Context(), s); err != nil {
					return fmt.Errorf("deleting schedule %s: %w", s.Name, err)
				}
				if owned := s.Spec.UseOwnerReferencesInBackup != nil && *s.Spec.UseOwnerReferencesInBackup; owned {
					fmt.Fprintf(cmd.OutOrStdout(), "Schedule %q deleted; it owns its backups, so they are deleted too.\n", s.Name)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "Schedule %q deleted; its backups stay until their TTL.\n", s.Name)
				}
				return nil
			})
		}),
	}
	return kube.Deletes(cmd, k, "schedule", &salvorv1.ScheduleList{}, "Delete schedule %s?")
}

func newDescribe(k *kube.Options) *cobra.Command {
	var format output.Format
	cmd := &cobra.Command{
		Use:     "describe NAME",
		Short:   "Show a schedule: its next runs, last run, skipped runs, and what its retention keeps",
		Example: "  salvor schedule describe nightly",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, s, shown, err := kube.Show[salvorv1.Schedule](cmd, k, format, "schedule", args[0])
			if shown || err != nil {
				return err
			}
			list := &salvorv1.BackupList{}
			if err := c.List(cmd.Context(), list, client.InNamespace(k.Namespace), client.MatchingLabels{salvorv1.ScheduleNameLabel: s.Name}); err != nil {
				return err
			}
			describe(cmd.OutOrStdout(), s, list.Items)
			return nil
		},
	}
	output.AddFlag(cmd.Flags(), &format)
	return kube.Describes(cmd, k, "schedule", &salvorv1.ScheduleList{})
}

func describe(w io.Writer, s *salvorv1.Schedule, backups []salvorv1.Backup) {
	p := func(label, format string, a ...any) {
		fmt.Fprintf(w, "%-20s"+format+"\n", append([]any{label + ":"}, a...)...)
	}
	p("Name", "%s", s.Name)
	p("Namespace", "%s", s.Namespace)
	p("Phase", "%s", phase(*s))
	for _, e := range s.Status.ValidationErrors {
		p("  Validation error", "%s", e)
	}
	timing, err := schedule.Parse(s.Spec.Schedule)
	zone := time.UTC
	if err == nil {
		zone = timing.Zone
		p("Schedule", "%s (zone %s)", s.Spec.Schedule, zone)
	} else {
		p("Schedule", "%s (invalid: %v)", s.Spec.Schedule, err)
	}
	p("Paused", "%v", s.Spec.Paused)
	policy := string(s.Spec.ConcurrencyPolicy)
	if policy == "" {
		policy = string(salvorv1.ConcurrencyForbid)
	}
	p("Concurrency policy", "%s", policy)
	if s.Spec.Jitter.Duration > 0 {
		p("Jitter", "up to %s (this schedule: %s)", s.Spec.Jitter.Duration, schedule.Offset(string(s.UID), s.Spec.Jitter.Duration).Round(time.Second))
	}
	if s.Spec.StartingDeadline.Duration > 0 {
		p("Starting deadline", "%s", s.Spec.StartingDeadline.Duration)
	}
	p("Retention", "%s", retentionText(s.Spec.Retention))
	if v := s.Spec.Verify; v != nil {
		how := "objects checked against their manifest"
		if v.RestoreIntoPrefix != "" {
			how += ", and a test restore into " + v.RestoreIntoPrefix + "-<namespace>"
		}
		p("Verify", "the first backup and every %d after it (%s); backups created so far: %d", v.Every, how, s.Status.BackupsCreated)
	}
	t := s.Spec.Template
	p("Template", "namespaces %s, resources %s, location %s, TTL %s", output.Filter(t.IncludedNamespaces, t.ExcludedNamespaces),
		output.Filter(t.IncludedResources, t.ExcludedResources), orDefault(t.StorageLocation), ttl(t.TTL.Duration))
	if len(s.Status.IgnoredFields) > 0 {
		p("Ignored fields", "%s (Velero's; Salvor does not act on them)", strings.Join(s.Status.IgnoredFields, ", "))
	}

	switch {
	case s.Spec.Paused:
		p("Next runs", "none: paused")
	case s.Status.NextRun != nil && timing != nil:
		offset := schedule.Offset(string(s.UID), s.Spec.Jitter.Duration)
		runs := []string{s.Status.NextRun.UTC().Format(time.RFC3339)}
		for n := s.Status.NextRun.Time; len(runs) < 3; {
			n = timing.Next(n.Add(-offset)).Add(offset)
			runs = append(runs, n.UTC().Format(time.RFC3339))
		}
		p("Next runs", "%s", strings.Join(runs, ", "))
	default:
		p("Next runs", "-")
	}
	if s.Status.LastBackupName != "" {
		last := "?"
		for _, b := range backups {
			if b.Name == s.Status.LastBackupName {
				last = phase2(b)
			}
		}
		p("Last run", "%s, backup %s (%s)", output.Time(s.Status.LastBackup), s.Status.LastBackupName, last)
	} else {
		p("Last run", "none yet")
	}
	if s.Status.SkippedRuns > 0 {
		p("Skipped runs", "%d; last at %s: %s", s.Status.SkippedRuns, output.Time(s.Status.LastSkipped), s.Status.LastSkipReason)
	} else {
		p("Skipped runs", "0")
	}

	fmt.Fprintln(w, "\nBackups:")
	if len(backups) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	keptBy := map[string]string{}
	if s.Spec.Retention != nil {
		for _, group := range retention.ByLocation(backups) {
			for _, d := range retention.Decide(*s.Spec.Retention, group, zone) {
				switch {
				case len(d.KeptBy) > 0:
					keptBy[d.Name] = "kept by " + strings.Join(d.KeptBy, ", ")
				case d.Delete():
					keptBy[d.Name] = "kept by no rule: being deleted"
				}
			}
		}
	}
	var rows [][]string
	for _, b := range newestFirst(backups) {
		fate := keptBy[b.Name]
		switch {
		case b.DeletionTimestamp != nil:
			fate = "being deleted"
		case b.Annotations[salvorv1.SyncedAnnotation] != "":
			fate = "synced from a location: " + expiry(b)
		case fate == "":
			fate = expiry(b)
		}
		rows = append(rows, []string{b.Name, phase2(b), output.Time(b.Status.StartTimestamp), b.Spec.StorageLocation, fate})
	}
	_ = output.IndentedTable(w, "  ", []string{"NAME", "STATUS", "STARTED", "LOCATION", "KEPT BY / EXPIRES"}, rows)
}
