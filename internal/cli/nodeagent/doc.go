// Package nodeagent is `salvor node-agent`, the command the node agent's
// DaemonSet runs (package nodeagent does the work).
package nodeagent
