package intake

import (
	"reflect"
	"testing"

	"github.com/akira-bot/akira/jobs/command"
	"github.com/akira-bot/akira/jobs/queue"
)

// TestEveryCommandHasAHandler: the parser's commands and the intake's handlers are two lists; every
// command the parser yields is run by a handler, a decision, or (help) the parser itself.
func TestEveryCommandHasAHandler(t *testing.T) {
	for _, name := range command.Names() {
		cmd := command.Command{Name: name}
		_, decision := cmd.Decision()
		_, handled := commandHandlers[name]
		switch {
		case name == command.CmdHelp:
			if handled {
				t.Errorf("help has a handler; the parser answers it")
			}
		case decision && handled:
			t.Errorf("%s is a decision and has a handler: the handler would never run", name)
		case !decision && !handled:
			t.Errorf("/akira %s has no handler in commandHandlers: a writer's command would be dropped", name)
		}
	}
}

// TestIntakeEventsAreDistinct: each registered trigger event has its own key, body type, events and
// handler, so a payload's event names exactly one body and one handler.
func TestIntakeEventsAreDistinct(t *testing.T) {
	keys, types, events := map[string]bool{}, map[reflect.Type]bool{}, map[string]bool{}
	if len(intakeHandlers) != len(queue.IntakeEvents) {
		t.Errorf("%d intake handlers for %d intake events", len(intakeHandlers), len(queue.IntakeEvents))
	}
	for _, e := range queue.IntakeEvents {
		typ := reflect.TypeOf(e.New())
		if keys[e.Key] || types[typ] || intakeHandlers[e.Key].Handle == nil || len(e.Events) == 0 {
			t.Errorf("intake event %v (%s): key or body type taken, or no handler or events", e.Events, typ)
		}
		keys[e.Key], types[typ] = true, true
		for _, name := range e.Events {
			if events[name] {
				t.Errorf("webhook event %s is registered twice", name)
			}
			events[name] = true
		}
	}
}
