package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/shotd/shotd/cluster"
	"github.com/shotd/shotd/config"
)

const clusterUsage = `usage: shotd cluster status [--config FILE] [--json]

Prints this node's view of the cluster: the members and their health, the JetStream meta
leader, and each bucket's leader and replicas. It asks the node that serve runs with the same
configuration (through the loopback address and token in data_dir/cluster/client.json).
`

// clusterCmd runs `shotd cluster ...`.
func (m *Main) clusterCmd(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "status" {
		for _, a := range args {
			if a == "-h" || a == "-help" || a == "--help" || a == "help" {
				fmt.Fprint(m.Stdout, clusterUsage)
				return nil
			}
		}
		fmt.Fprint(m.Stderr, clusterUsage)
		return errors.New("cluster: want a subcommand: status")
	}
	fs := flag.NewFlagSet("cluster status", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	cfgPath := fs.String("config", "", "TOML configuration file")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	fs.Usage = func() { fmt.Fprint(m.Stderr, clusterUsage) }
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *cfgPath == "" {
		*cfgPath = installedConfig()
	}
	cfg, err := config.Load(*cfgPath, m.Env)
	if err != nil {
		return err
	}
	if !cfg.Cluster.Enabled() {
		return errors.New("cluster: the configuration has no [cluster] table: this node runs alone")
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := cluster.AskStatus(actx, cfg.DataDir, cfg.Cluster.NodeName)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	st.Print(m.Stdout)
	return nil
}
