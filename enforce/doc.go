// Package enforce holds the use cases: the Enforcer judges reported Workflow State changes in
// the order of each item's history and carries the verdicts out (revert, explain), the
// Automation moves items by itself (cascade, convergence, lifecycle), the Reconciler finds what
// no webhook reported, and the Facade serves the MCP tools. Every verdict comes from package
// policy; enforce gathers its inputs and acts on it.
//
// enforce declares the ports it needs (ports.go: Board, Store, …) and the records it keeps
// (records.go); ghboard and store implement them. It imports no SQL driver, no HTTP client and
// no GitHub library (layout_test.go checks it). docs/DESIGN.md draws the map.
package enforce
