// Command notecheck checks cairn's signed checkpoints with an independent
// implementation of the C2SP signed-note format: Go's
// golang.org/x/mod/sumdb/note. cairn's tests run it (crates/cli/tests/it/notecheck.rs).
//
//	notecheck keygen NAME               prints a signer key, then its verifier key
//	notecheck verify VERIFIERKEY FILE   opens the note in FILE; prints its text; exit 1 if refused
//	notecheck sign SIGNERKEYFILE FILE   signs the text in FILE; prints the note
package main

import (
	"crypto/rand"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "notecheck: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: notecheck keygen NAME | verify VERIFIERKEY FILE | sign SIGNERKEYFILE FILE")
	}
	switch {
	case args[0] == "keygen" && len(args) == 2:
		signer, verifier, err := note.GenerateKey(rand.Reader, args[1])
		if err != nil {
			return err
		}
		fmt.Println(signer)
		fmt.Println(verifier)
		return nil
	case args[0] == "verify" && len(args) == 3:
		verifier, err := note.NewVerifier(args[1])
		if err != nil {
			return fmt.Errorf("verifier key: %w", err)
		}
		msg, err := os.ReadFile(args[2])
		if err != nil {
			return err
		}
		opened, err := note.Open(msg, note.VerifierList(verifier))
		if err != nil {
			return fmt.Errorf("open: %w", err)
		}
		fmt.Print(opened.Text)
		return nil
	case args[0] == "sign" && len(args) == 3:
		key, err := os.ReadFile(args[1])
		if err != nil {
			return err
		}
		signer, err := note.NewSigner(strings.TrimSpace(string(key)))
		if err != nil {
			return fmt.Errorf("signer key: %w", err)
		}
		text, err := os.ReadFile(args[2])
		if err != nil {
			return err
		}
		msg, err := note.Sign(&note.Note{Text: string(text)}, signer)
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		_, err = os.Stdout.Write(msg)
		return err
	default:
		return fmt.Errorf("unknown command or wrong arguments: %q", args)
	}
}
