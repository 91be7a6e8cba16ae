// Acme Photos: Acme's second example app; it shares Acme's vendor mirror with Acme Notes.
import ExampleKit

ExampleApp(id: "com.acme.photos", name: "Acme Photos", accent: 0xC2410C).run()
