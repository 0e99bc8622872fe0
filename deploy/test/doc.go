// Package deploytest checks Akira's deployment files with their own tools' Go libraries: the Helm
// chart rendered by Helm's SDK and every object decoded strictly into Kubernetes' API types, the
// compose file loaded by the Compose specification's loader, and the Dockerfile parsed by BuildKit's
// parser. It is a module of its own so that Akira does not depend on Kubernetes libraries.
package deploytest
