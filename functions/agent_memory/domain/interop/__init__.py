"""Import/export wing (DESIGN: migration path inventory → translate → merge → validate)."""
