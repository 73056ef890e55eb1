// Package nodeagent is the node agent: one pod per node (a DaemonSet of
// Salvor's image, `salvor node-agent server`) that copies the files of
// pod volumes on its node into the location's kopia repositories, for the
// PodVolumeBackups the salvor.dev/pod-volumes action makes. It reads a
// volume where the kubelet mounted it (the node's /var/lib/kubelet/pods,
// mounted read-only into the agent with HostToContainer propagation, so
// that volumes mounted after the agent started are seen), found from the
// pod's UID and the volume (package podvolume), never from a path a
// resource names. It writes into the same repositories as the data mover
// (kopia/<namespace>/ of the location), which the server makes and whose
// password it keeps; the agent reads that password and the location's
// credentials from their Secrets in the server's namespace, as it needs
// them, and keeps them only in memory and in a private scratch file for
// the object store's SDK while a backup runs.
//
// The server takes a PodVolumeBackup from New to Accepted once the
// repository exists and an agent runs on the pod's node; the agent takes
// it from Accepted (or InProgress, after the agent restarted: kopia
// resumes from what it already wrote) to Completed, Failed or Canceled.
package nodeagent
