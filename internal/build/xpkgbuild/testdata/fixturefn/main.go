// Command fixturefn is the smallest main package xpkgbuild's tests package
// for every platform: what Build does with a binary does not depend on
// what the binary is, and cross-compiling the real function's
// dependencies for arm64 was most of the test's cold time (the real-
// controller suite packages the real function for linux/amd64).
package main

import "os"

func main() { os.Exit(0) }
