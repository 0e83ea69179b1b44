package config

import (
	"fmt"
	"strings"

	ralphgate "github.com/ralph-gate/ralph-gate"
)

// Mode is what a command is about to do with the configuration. Each mode requires exactly
// what it uses, so a local agent's `mcp --stdio` is not asked for the webhook secret.
type Mode string

const (
	// ForServe is `serve` (and what doctor and validate check by default): the App's id,
	// private key and webhook secret, and every MCP agent's token. Projects are not required:
	// without them serve reads each organization's policy from its repository.
	ForServe Mode = "serve"
	// ForMCP is `mcp --stdio`: the App's id and private key and at least one project listed
	// in the file. It serves no webhook and authenticates no agent by token.
	ForMCP Mode = "mcp"
	// ForFile is the file (and the environment) alone: no secret is required, a given one
	// must still be sound.
	ForFile Mode = "file"
)

// Modes lists every mode, for flags and messages.
var Modes = []Mode{ForServe, ForMCP, ForFile}

// ParseMode reads a mode's name.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == strings.ToLower(strings.TrimSpace(s)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown mode %q: want serve, mcp or file", s)
}

// Check runs the checks a mode adds to Validate: what serving or acting as the App needs.
// lookup resolves the agents' token_env variables (os.LookupEnv in production). It is what
// app.New runs on the configuration it is given.
func (c Config) Check(mode Mode, lookup func(string) (string, bool)) Problems {
	switch mode {
	case ForServe:
		problems := c.ValidateServe()
		_, creds := c.MCPCredentials(lookup)
		return appendNew(problems, creds...)
	case ForMCP:
		return append(c.validateApp(), c.validateProjectsListed()...)
	case ForFile:
		return nil
	}
	return Problems{{Path: "(mode)", Message: fmt.Sprintf("unknown mode %q", mode)}}
}

// Preflight is the one static check every command runs before it acts — validate, doctor,
// serve and mcp alike: it reads file (empty: the embedded config.yml), decodes it strictly,
// applies the environment (lookup: os.LookupEnv in production), fills the defaults and
// reports every problem of the file and of mode, each by its key path, each once. The
// configuration is returned even with problems (doctor goes on with what it can check);
// err is set only when the file cannot be read.
func Preflight(file string, mode Mode, lookup func(string) (string, bool)) (Config, Problems, error) {
	data := []byte(nil)
	if file == "" {
		data = ralphgate.DefaultConfig()
	} else {
		var err error
		if data, err = readFile(file); err != nil {
			return Config{}, nil, err
		}
	}
	cfg, problems, parsed, origin := decode(data)
	problems = append(problems, cfg.ApplyEnv(lookup)...)
	cfg.applyDefaults()
	if parsed {
		problems = append(problems, origin.unshadowed(problems, cfg.Validate())...)
		problems = appendNew(problems, origin.unshadowed(problems, cfg.Check(mode, lookup))...)
	}
	return cfg, problems, nil
}

// LoadFor is Preflight for commands that stop on any problem: the error is Problems when the
// file was read but something is wrong.
func LoadFor(file string, mode Mode, lookup func(string) (string, bool)) (Config, error) {
	cfg, problems, err := Preflight(file, mode, lookup)
	if err != nil {
		return Config{}, err
	}
	if len(problems) > 0 {
		return Config{}, problems
	}
	return cfg, nil
}
