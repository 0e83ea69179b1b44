// Package toolspec is the contract the MCP façade offers agents: tool names, descriptions and
// hints, the typed input and output of every tool (their JSON schemas are inferred from these
// structs and their `jsonschema` tags), and the validation of tool input.
//
// It is deliberately light: it imports only the standard library and package policy, so its
// fuzz target builds and runs in seconds. It must not import enforce, store or any SDK.
package toolspec
