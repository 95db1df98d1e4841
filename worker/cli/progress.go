package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress of long commands (optimize, clustering, vacuum, checkpoint, ingest, merge), on stderr only, so
// that stdout (the text report, or the one JSON document) is the same with or without it:
//   - on a terminal, a progress bar with bytes, files and the ETA (github.com/schollz/progressbar/v3);
//   - elsewhere (a pipe, a log file), a plain line when a phase starts, every progressInterval, and at the end;
//   - nothing with -o json (every Job) or --quiet.
//
// The engines report counts through the context (worker/progress); their text messages ("rewrote 3/10
// bins") ride along in the bar's description and the lines.

// progressInterval is how often the plain lines repeat; tests shorten it.
var progressInterval = 10 * time.Second

type progressMode int

const (
	progressOff progressMode = iota
	progressBar
	progressLines
)

// progress implements worker/progress.Reporter for the CLI.
type progress struct {
	mu   sync.Mutex
	w    io.Writer
	mode progressMode
	now  func() time.Time

	phase                   string
	files, filesTotal       int64
	bytes, bytesTotal       int64
	started, lastLine, last time.Time
	msg                     string
	bar                     *progressbar.ProgressBar
	shown                   bool          // a bare status line (no phase yet) is on the terminal
	stopTicker              chan struct{} // ends the lines' ticker of the current phase
}

func newProgress(w io.Writer, enabled bool) *progress {
	p := &progress{w: w, now: time.Now}
	if !enabled {
		return p
	}
	p.mode = progressLines
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.mode = progressBar
	}
	return p
}

// Start begins a phase with its totals (below zero: unknown).
func (p *progress) Start(phase string, files, bytes int64) {
	if p == nil || p.mode == progressOff {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishPhase()
	p.phase, p.files, p.filesTotal, p.bytes, p.bytesTotal = phase, 0, files, 0, bytes
	p.started, p.msg = p.now(), ""
	switch p.mode {
	case progressBar:
		p.clearLine()
		max := bytes
		if max <= 0 {
			max = -1 // a spinner
		}
		p.bar = progressbar.NewOptions64(max,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetDescription(p.describe()))
	case progressLines:
		p.line("started")
		p.startTicker()
	}
}

// startTicker repeats the line every progressInterval while the phase runs, also when the engine reports
// nothing for a while (one large bin).
func (p *progress) startTicker() {
	every := progressInterval
	if every <= 0 {
		return
	}
	stop := make(chan struct{})
	p.stopTicker = stop
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				p.mu.Lock()
				if p.phase != "" && p.now().Sub(p.lastLine) >= every {
					p.line("")
				}
				p.mu.Unlock()
			}
		}
	}()
}

// Advance adds finished files and bytes to the phase.
func (p *progress) Advance(files, bytes int64) {
	if p == nil || p.mode == progressOff {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files += files
	p.bytes += bytes
	p.tick(bytes)
}

// update shows an engine's message: in the bar's description, in the next plain line, or, before any
// phase, as a status line on a terminal.
func (p *progress) update(format string, args ...any) {
	if p == nil || p.mode == progressOff {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msg = fmt.Sprintf(format, args...)
	if p.phase != "" {
		p.msg = strings.TrimPrefix(p.msg, p.phase+": ") // the commands prefix their messages with the phase
	}
	if p.phase == "" {
		if p.mode == progressBar && p.now().Sub(p.last) >= 100*time.Millisecond {
			p.last, p.shown = p.now(), true
			fmt.Fprintf(p.w, "\r\033[K%s", p.msg)
		}
		return
	}
	p.tick(0)
}

// done ends the last phase: the bar is cleared, the lines get a final one.
func (p *progress) done() {
	if p == nil || p.mode == progressOff {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishPhase()
	p.clearLine()
}

func (p *progress) tick(bytes int64) {
	switch p.mode {
	case progressBar:
		if p.bar != nil {
			p.bar.Describe(p.describe())
			_ = p.bar.Add64(bytes)
		}
	case progressLines:
		if p.phase != "" && p.now().Sub(p.lastLine) >= progressInterval {
			p.line("")
		}
	}
}

func (p *progress) finishPhase() {
	if p.phase == "" {
		return
	}
	switch p.mode {
	case progressBar:
		if p.bar != nil {
			_ = p.bar.Finish()
			p.bar = nil
		}
	case progressLines:
		if p.stopTicker != nil {
			close(p.stopTicker)
			p.stopTicker = nil
		}
		p.line("done")
	}
	p.phase = ""
}

func (p *progress) clearLine() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// describe is the bar's text: the phase, files done of the total, the engine's last message.
func (p *progress) describe() string {
	s := p.phase + ": " + count(p.files, p.filesTotal) + " files"
	if p.msg != "" {
		s += " · " + p.msg
	}
	return s
}

// line prints one plain progress line: phase, files, bytes, percent, elapsed, ETA and the engine's message.
func (p *progress) line(event string) {
	now := p.now()
	p.lastLine = now
	elapsed := now.Sub(p.started)
	s := fmt.Sprintf("%s: %s files, %s", p.phase, count(p.files, p.filesTotal), byteCount(p.bytes, p.bytesTotal))
	if p.bytesTotal > 0 {
		s += fmt.Sprintf(" (%d%%)", p.bytes*100/p.bytesTotal)
	}
	s += ", " + elapsed.Round(time.Second).String() + " elapsed"
	if event == "" && p.bytesTotal > 0 && p.bytes > 0 && p.bytes < p.bytesTotal {
		eta := time.Duration(float64(elapsed) * float64(p.bytesTotal-p.bytes) / float64(p.bytes))
		s += ", ETA " + eta.Round(time.Second).String()
	}
	if event != "" {
		s += "; " + event
	}
	if p.msg != "" && event != "started" {
		s += "; " + p.msg
	}
	fmt.Fprintln(p.w, s)
}

func count(n, total int64) string {
	if total < 0 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d/%d", n, total)
}

func byteCount(n, total int64) string {
	if total < 0 {
		return humanBytes(n)
	}
	return humanBytes(n) + "/" + humanBytes(total)
}
