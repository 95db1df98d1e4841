// Package cli implements the table commands of the deltakeeper binary (inspect, scan, optimize, vacuum,
// checkpoint, alter, quality, maintain…). They work on a local path or an s3:// URI with no cluster at all,
// and they are what the operator's Jobs run, under `deltakeeper worker`.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	wprogress "github.com/deltakeeper/deltakeeper/worker/progress"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Mode says who runs a command: a person at the top level, or a Job under `deltakeeper worker`.
type Mode int

const (
	// Interactive: exit codes distinguish nothing-to-do (3) from success (0).
	Interactive Mode = iota
	// Job: nothing-to-do exits 0 (Kubernetes cannot count another code as success); the result says it.
	Job
)

// Constructors returns the constructors of every table command. Each command's help ends with the
// exit codes (worker/result's one taxonomy), as its mode uses them.
func Constructors() []func(Mode) *cobra.Command {
	out := make([]func(Mode) *cobra.Command, len(commands))
	for i, c := range commands {
		out[i] = func(m Mode) *cobra.Command {
			cmd := c(m)
			cmd.Long = strings.TrimRight(cmd.Long, "\n") + "\n\n" + ExitCodesHelp(m)
			refuseBadUsage(cmd)
			return cmd
		}
	}
	return out
}

// refuseBadUsage makes an unknown flag, a flag value that does not parse or a wrong number of
// arguments a refusal (exit 2, like every other bad argument) instead of cobra's plain error,
// which the binary would report as exit 1, "may pass on retry".
func refuseBadUsage(cmd *cobra.Command) {
	usage := func(c *cobra.Command, err error) error {
		fmt.Fprintf(c.ErrOrStderr(), "%s refused: %v (see --help)\n", c.Name(), err)
		return exitError{code: result.ExitRefused, err: err}
	}
	cmd.SetFlagErrorFunc(usage)
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return usage(c, err)
			}
			return nil
		}
	}
}

// ExitCodesHelp is the exit-code section of the help of a command run in mode m.
func ExitCodesHelp(m Mode) string {
	text := result.ExitCodesHelp()
	if m == Job {
		text += "  Under `deltakeeper worker` (this command) nothing to do exits 0.\n"
	}
	return text
}

// commands is filled by each command's file, so adding a command touches only its own file.
var commands []func(Mode) *cobra.Command

func register(c func(Mode) *cobra.Command) { commands = append(commands, c) }

// outputFlags are shared by every table command.
type outputFlags struct {
	format     string // text | json
	resultFile string
	quiet      bool
}

func (o *outputFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.format, "output", "o", "text", "result format: text for people, json for machines (one compact document)")
	cmd.Flags().StringVar(&o.resultFile, "result-file", "", "also write the JSON result to this file (a Job's /dev/termination-log)")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr (-o json shows none either)")
}

// env is what a command body gets.
type env struct {
	ctx      context.Context
	text     io.Writer // human output; discarded with -o json
	progress *progress
}

// body runs a command and returns its result; an error is classified with result.Classify.
type body func(e *env) (*result.Result, error)

// run executes a command body with the shared behaviour: timing, error classification, output, result file
// and exit code. dataOnStdout moves the result to stderr when stdout carries data (scan).
func run(cmd *cobra.Command, name string, mode Mode, out *outputFlags, dataOnStdout bool, fn body) error {
	if out.format != "text" && out.format != "json" {
		return &result.Error{Outcome: result.Refused, Reason: result.ReasonBadArgument,
			Err: fmt.Errorf("-o %q: use text or json", out.format)}
	}
	start := time.Now()
	resultOut := cmd.OutOrStdout()
	if dataOnStdout {
		resultOut = cmd.ErrOrStderr()
	}
	text := resultOut
	if out.format == "json" {
		text = io.Discard
	}
	prog := newProgress(cmd.ErrOrStderr(), out.format == "text" && !out.quiet)
	e := &env{ctx: wprogress.With(cmd.Context(), prog), text: text, progress: prog}
	res, err := fn(e)
	e.progress.done()
	if res == nil {
		res = &result.Result{}
	}
	res.Command = name
	if err != nil {
		res.Outcome, res.Reason = result.Classify(err)
		res.Message = err.Error()
	} else if res.Outcome == "" {
		res.Outcome = result.Succeeded
	}
	res.Since(start)

	if out.format == "json" {
		data, encErr := res.Encode()
		if encErr != nil {
			return encErr
		}
		fmt.Fprintln(resultOut, string(data))
	} else if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s %s: %v\n", name, res.Outcome, err)
	}
	if out.resultFile != "" {
		if werr := res.WriteFile(out.resultFile); werr != nil {
			return errors.Join(err, werr)
		}
	}
	code := res.Outcome.ExitCode()
	if mode == Job && res.Outcome == result.NothingToDo {
		code = 0
	}
	if code == 0 {
		return nil
	}
	return exitError{code: code, err: err}
}

// exitError carries the exit code; the message was already printed.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("exit %d", e.code)
}
func (e exitError) ExitCode() int { return e.code }
func (e exitError) Unwrap() error { return e.err }

// openTable opens the table at a location, with S3 settings from the standard AWS environment.
func openTable(ctx context.Context, location string) (*delta.Table, error) {
	store, err := storage.Open(ctx, location, storage.ConfigFromEnv())
	if err != nil {
		return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("open %s: %w", location, err))
	}
	return delta.NewTable(store), nil
}
