package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/podvolume"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Options say where the demo finds what it runs.
type Options struct {
	Salvor    string // the salvor binary
	PluginDir string // example plugins
	Testbed   string // directory with etcd and kube-apiserver
	CRDs      string // config/crd
	Out       io.Writer
}

// Verdict is the last line of a successful demo.
const Verdict = "DEMO PASSED: every object came back"

type demo struct {
	o          Options
	work       string
	kubeconfig string
	c          client.Client
	cfg        *rest.Config
	server     *exec.Cmd
	timings    [][2]string
}

// took records how long a step took since start, for the summary.
func (d *demo) took(what string, start time.Time) {
	d.timings = append(d.timings, [2]string{what, time.Since(start).Round(time.Millisecond).String()})
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.o.Out, "\n==> "+format+"\n", args...) }

// Run tells the story; it returns an error saying what went wrong.
func Run(ctx context.Context, o Options) (err error) {
	d, r, end, err := begin(o, "salvor-demo-")
	if err != nil {
		return err
	}
	defer end()

	d.say("Starting a node that runs pods as local processes, kube-scheduler and kube-controller-manager's DaemonSet\n    controller")
	start := time.Now()
	var node *testbed.PodNode
	if err := r.step(func() { node = d.startNode(r, nil, demoControllers, d.storeDir()) }); err != nil {
		return fmt.Errorf("starting the node (run `make demo` or `make testbed` first?): %w", err)
	}
	d.took("node up", start)
	fmt.Fprintf(o.Out, "    node %s runs image salvor as %s; testbed logs: %s\n", node.Name, d.o.Salvor, filepath.Join(d.work, "testbed.log"))

	d.say("Installing Salvor (its roles, the node agent) and starting salvor server with its built-in plugins and the example\n    plugins; the backups go to Salvor's built-in filesystem store, bucket backups in %s", d.storeDir())
	loc, err := d.filesystemLocation()
	if err != nil {
		return err
	}
	if err := d.install(ctx, node, loc); err != nil {
		return err
	}
	if err := d.salvor(ctx, "plugin", "list", "--plugin-dir", o.PluginDir); err != nil {
		return err
	}

	d.say("Deploying the sample application in namespace demo-shop")
	objects, err := d.deploy(ctx)
	if err != nil {
		return err
	}
	before := map[string]map[string]any{}
	for _, k := range objects {
		if before[k.String()], err = d.snapshot(ctx, k); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "    %d objects: a Deployment, Services, ConfigMaps, Secrets, a ServiceAccount, a CRD and its custom resources\n", len(objects))
	fmt.Fprintln(o.Out, "    (one ConfigMap asks the example async plugin for a 5-second operation)")
	files := filesPod{namespace: "demo-shop", name: "files", volume: "data", mountPath: "/data", serviceAccount: "shop"}
	volumeDir, err := files.run(ctx, d, node)
	if err != nil {
		return err
	}
	sums, volumeBytes, err := randomFiles(volumeDir, 256, 1<<20, 1, 0o644, func(i int) string { return fmt.Sprintf("chunk-%03d.bin", i) })
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "    and pod %s on node %s, whose volume data holds %d files, %d MiB (annotation %s=data: file-system backup)\n",
		files, node.Name, len(sums), volumeBytes>>20, podvolume.IncludeAnnotation)

	d.say("Backing it up")
	t := time.Now()
	if err := d.salvor(ctx, "backup", "create", "demo", "--include-namespaces", "demo-shop", "--include-cluster-resources",
		"--include-resources", "namespaces,configmaps,secrets,serviceaccounts,services,deployments.apps,widgets.demo.salvor.dev,customresourcedefinitions.apiextensions.k8s.io,pods",
		"--wait"); err != nil {
		// Say why, as a user would ask next.
		_ = d.salvor(ctx, "backup", "describe", "demo", "--details")
		return err
	}
	d.took("backup (with a plugin operation, the pod's files copied into the bucket by the node agent)", t)
	if err := d.salvor(ctx, "backup", "describe", "demo", "--details"); err != nil {
		return err
	}
	pvbDone, pvbAll, pvbBytes, err := d.podVolumeBackups(ctx, "demo")
	if err != nil {
		return err
	}

	d.say("Disaster: deleting the application and its CRD")
	for _, k := range objects {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(k.gvk)
		u.SetNamespace(k.ns)
		u.SetName(k.name)
		if err := d.c.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", k, err)
		}
	}
	if err := d.c.Delete(ctx, &apiextv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.demo.salvor.dev"}}); err != nil {
		return err
	}
	if err := d.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: files.namespace, Name: files.name}}); err != nil {
		return err
	}
	if err := d.eventually(ctx, 2*time.Minute, func() bool {
		return apierrors.IsNotFound(d.c.Get(ctx, client.ObjectKey{Namespace: files.namespace, Name: files.name}, &corev1.Pod{}))
	}); err != nil {
		return fmt.Errorf("pod %s did not go away", files)
	}
	// The node keeps a deleted pod's directory; the disk is lost with it.
	if err := os.RemoveAll(volumeDir); err != nil {
		return err
	}
	if err := d.eventually(ctx, time.Minute, func() bool {
		err := d.c.Get(ctx, client.ObjectKey{Name: "widgets.demo.salvor.dev"}, &apiextv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err)
	}); err != nil {
		return errors.New("the CRD did not go away")
	}
	fmt.Fprintln(o.Out, "    gone, the pod and its volume's files included. (The namespace object itself stays: this control plane has no\n    namespace controller to delete it, nor a Deployment controller to run the Deployment's pods.)")

	d.say("Restoring from the backup")
	t = time.Now()
	if err := d.salvor(ctx, "restore", "create", "demo-restore", "--from-backup", "demo", "--wait"); err != nil {
		return err
	}
	d.took("restore", t)

	d.say("Checking every object against the original")
	fmt.Fprintln(o.Out, "    (ignoring what the API server owns, and the labels and annotations Salvor and the example plugins add)")
	diffs := 0
	for _, k := range objects {
		after, err := d.snapshot(ctx, k)
		if err != nil {
			fmt.Fprintf(o.Out, "    MISSING  %s: %v\n", k, err)
			diffs++
			continue
		}
		if !reflect.DeepEqual(after, before[k.String()]) {
			fmt.Fprintf(o.Out, "    DIFFERS  %s\n", k)
			if os.Getenv("SALVOR_DEMO_DEBUG") != "" {
				fmt.Fprintf(o.Out, "      before %v\n      after  %v\n", before[k.String()], after)
			}
			diffs++
		}
	}
	fileDiffs, err := files.check(ctx, d, node, sums)
	if err != nil {
		fmt.Fprintf(o.Out, "    VOLUME   %v\n", err)
		diffs++
	} else if fileDiffs > 0 {
		diffs++
	}
	b := &salvorv1.Backup{}
	_ = d.c.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "demo"}, b)
	rs := &salvorv1.Restore{}
	_ = d.c.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "demo-restore"}, rs)

	d.say("Summary")
	tw := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "    WHAT\tRESULT")
	if p := b.Status.Progress; p != nil {
		fmt.Fprintf(tw, "    objects backed up\t%d (%s)\n", p.ItemsBackedUp, b.Status.Phase)
	}
	fmt.Fprintf(tw, "    plugin operations\t%d of %d completed\n", b.Status.BackupItemOperationsCompleted, b.Status.BackupItemOperationsAttempted)
	fmt.Fprintf(tw, "    pod volume backups\t%d of %d completed, %d MiB into the bucket\n", pvbDone, pvbAll, pvbBytes>>20)
	if p := rs.Status.Progress; p != nil {
		fmt.Fprintf(tw, "    objects restored\t%d (%s)\n", p.ItemsRestored, rs.Status.Phase)
	}
	fmt.Fprintf(tw, "    objects checked\t%d, %d differing\n", len(objects), diffs)
	for _, tm := range d.timings {
		fmt.Fprintf(tw, "    %s\t%s\n", tm[0], tm[1])
	}
	_ = tw.Flush()
	if diffs > 0 || rs.Status.Phase != salvorv1.RestorePhaseCompleted {
		return fmt.Errorf("%d objects did not come back as they were (restore %s)", diffs, rs.Status.Phase)
	}
	fmt.Fprintf(o.Out, "\n%s\n", Verdict)
	return nil
}

type ref struct {
	gvk      schema.GroupVersionKind
	ns, name string
}

func (k ref) String() string { return fmt.Sprintf("%s %s/%s", k.gvk.Kind, k.ns, k.name) }

func (d *demo) create(ctx context.Context, objs ...client.Object) error {
	for _, o := range objs {
		if err := d.c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", o.GetName(), err)
		}
	}
	return nil
}

var widgetGVK = schema.GroupVersionKind{Group: "demo.salvor.dev", Version: "v1", Kind: "Widget"}

func (d *demo) deploy(ctx context.Context) ([]ref, error) {
	ns := "demo-shop"
	crd := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.demo.salvor.dev"},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "demo.salvor.dev", Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: &[]bool{true}[0]}}}}}},
		},
	}
	if err := d.create(ctx, crd, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, err
	}
	if err := d.eventually(ctx, 30*time.Second, func() bool {
		return d.c.List(ctx, &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "demo.salvor.dev/v1", "kind": "WidgetList"}}) == nil
	}); err != nil {
		return nil, errors.New("the demo CRD did not become established")
	}
	var objs []client.Object
	var refs []ref
	add := func(gvk schema.GroupVersionKind, o client.Object) {
		objs = append(objs, o)
		refs = append(refs, ref{gvk: gvk, ns: ns, name: o.GetName()})
	}
	cmGVK, secGVK := corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithKind("Secret")
	for i := range 20 {
		add(cmGVK, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("catalog-%02d", i), Namespace: ns, Labels: map[string]string{"app": "shop"}},
			Data: map[string]string{"item": fmt.Sprintf("widget-%d", i), "price": fmt.Sprint(10 + i)}})
	}
	add(cmGVK, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "search-index", Namespace: ns,
		Annotations: map[string]string{"example.io/operation-seconds": "5"}}, Data: map[string]string{"state": "built"}})
	for i := range 5 {
		add(secGVK, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("key-%d", i), Namespace: ns},
			Data: map[string][]byte{"token": []byte(fmt.Sprintf("s3cr3t-%d", i))}})
	}
	add(corev1.SchemeGroupVersion.WithKind("ServiceAccount"), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns}})
	for _, name := range []string{"web", "api"} {
		add(corev1.SchemeGroupVersion.WithKind("Service"), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "shop"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
	}
	add(appsv1.SchemeGroupVersion.WithKind("Deployment"), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "shop"}},
				Spec: corev1.PodSpec{ServiceAccountName: "shop", Containers: []corev1.Container{{Name: "shop", Image: "nginx:1.27"}}}}}})
	for i := range 10 {
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(widgetGVK)
		w.SetNamespace(ns)
		w.SetName(fmt.Sprintf("widget-%d", i))
		w.Object["spec"] = map[string]any{"size": int64(i), "colour": []string{"red", "green", "blue"}[i%3]}
		add(widgetGVK, w)
	}
	return refs, d.create(ctx, objs...)
}

// snapshot reads an object without what the API server owns.
func (d *demo) snapshot(ctx context.Context, k ref) (map[string]any, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.gvk)
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: k.ns, Name: k.name}, u); err != nil {
		return nil, err
	}
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
	unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
	labels := u.GetLabels()
	// Salvor's labels, and the one the example RestoreItemAction adds.
	for _, l := range []string{salvorv1.BackupNameLabel, salvorv1.RestoreNameLabel, "example.io/restored-by"} {
		delete(labels, l)
	}
	if len(labels) == 0 {
		labels = nil
	}
	u.SetLabels(labels)
	ann := u.GetAnnotations()
	delete(ann, "example.io/backup")
	if len(ann) == 0 {
		ann = nil
	}
	u.SetAnnotations(ann)
	return u.Object, nil
}

// begin makes a demo's work directory, its testbed log and the runner
// that starts testbed parts into it, and starts the control plane; end
// stops what the demo started (the server, the testbed, the control
// plane) and removes the directory.
func begin(o Options, prefix string) (d *demo, r *runner, end func(), err error) {
	ctrllog.SetLogger(logr.Discard())
	d = &demo{o: o}
	if d.o.Salvor, err = filepath.Abs(o.Salvor); err != nil {
		return nil, nil, nil, err
	}
	if d.work, err = os.MkdirTemp("", prefix); err != nil {
		return nil, nil, nil, err
	}
	logs, err := os.Create(filepath.Join(d.work, "testbed.log"))
	if err != nil {
		os.RemoveAll(d.work)
		return nil, nil, nil, err
	}
	r = &runner{dir: filepath.Join(d.work, "testbed"), log: logs}
	d.say("Starting a local control plane (etcd and kube-apiserver)")
	env, err := d.controlPlane()
	if err != nil {
		logs.Close()
		os.RemoveAll(d.work)
		return nil, nil, nil, err
	}
	return d, r, func() {
		d.stopServer()
		r.stop()
		_ = env.Stop()
		logs.Close()
		os.RemoveAll(d.work)
	}, nil
}

// controlPlane starts etcd and kube-apiserver with Salvor's CRDs, and
// gives the demo an administrator's kubeconfig and client.
func (d *demo) controlPlane() (*envtest.Environment, error) {
	start := time.Now()
	env := testbed.Environment(d.o.Testbed, d.o.CRDs)
	if _, err := env.Start(); err != nil {
		return nil, fmt.Errorf("starting the control plane (run `make testbed` first?): %w", err)
	}
	user, err := env.AddUser(envtest.User{Name: "demo", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	d.kubeconfig = filepath.Join(d.work, "kubeconfig")
	if err := os.WriteFile(d.kubeconfig, kc, 0o600); err != nil {
		_ = env.Stop()
		return nil, err
	}
	d.cfg = user.Config()
	d.cfg.QPS, d.cfg.Burst = 1000, 2000
	scheme := kube.Scheme()
	_ = apiextv1.AddToScheme(scheme)
	if d.c, err = client.New(d.cfg, client.Options{Scheme: scheme}); err != nil {
		_ = env.Stop()
		return nil, err
	}
	d.took("control plane up, Salvor's CRDs installed", start)
	fmt.Fprintf(d.o.Out, "    kubeconfig: %s\n", d.kubeconfig)
	return env, nil
}

func (d *demo) eventually(ctx context.Context, timeout time.Duration, cond func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
}

func (d *demo) startServer(extra ...string) error {
	logs, err := os.Create(filepath.Join(d.work, "server.log"))
	if err != nil {
		return err
	}
	d.server = exec.Command(d.o.Salvor, "server", "--kubeconfig", d.kubeconfig, "--namespace", "salvor",
		"--plugin-dir", d.o.PluginDir, "--metrics-address", "0", "--health-address", "0",
		"--location-check-interval", "2s", "--item-operation-sync-frequency", "1s")
	d.server.Args = append(d.server.Args, extra...)
	d.server.Stdout, d.server.Stderr = logs, logs
	// Its own process group: stopping it stops its plugins too.
	d.server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	d.server.Env = append(os.Environ(), "EXAMPLE_ASYNC_STATE_DIR="+filepath.Join(d.work, "async"))
	if err := d.server.Start(); err != nil {
		return err
	}
	fmt.Fprintf(d.o.Out, "    server log: %s\n", logs.Name())
	return nil
}

func (d *demo) stopServer() {
	if d.server == nil || d.server.Process == nil {
		return
	}
	_ = syscall.Kill(-d.server.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = d.server.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-d.server.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

func (d *demo) waitLocation(ctx context.Context) error {
	bsl := &salvorv1.BackupStorageLocation{}
	err := d.eventually(ctx, time.Minute, func() bool {
		err := d.c.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "default"}, bsl)
		return err == nil && bsl.Status.Phase == salvorv1.BackupStorageLocationPhaseAvailable
	})
	if err != nil {
		return fmt.Errorf("backup storage location default did not become Available (%s %q): %w", bsl.Status.Phase, bsl.Status.Message, err)
	}
	return nil
}

// salvor runs the CLI, showing the command and its output.
func (d *demo) salvor(ctx context.Context, args ...string) error {
	fmt.Fprintf(d.o.Out, "    $ salvor %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, d.o.Salvor, append([]string{"--kubeconfig", d.kubeconfig, "--namespace", "salvor"}, args...)...)
	// One writer for both, so exec gives the command one pipe and lines
	// from the two never interleave mid-line.
	w := &indent{w: d.o.Out}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("salvor %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// indent writes what salvor prints indented under its command line. A
// write may end mid-line (tabwriter writes a table cell by cell), so the
// indent goes only where a line starts.
type indent struct {
	w       io.Writer
	midLine bool
}

func (i *indent) Write(p []byte) (int, error) {
	for _, l := range strings.SplitAfter(string(p), "\n") {
		if l == "" {
			continue
		}
		if !i.midLine {
			l = "      " + l
		}
		if _, err := io.WriteString(i.w, l); err != nil {
			return 0, err
		}
		i.midLine = !strings.HasSuffix(l, "\n")
	}
	return len(p), nil
}
