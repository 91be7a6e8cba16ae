// Acme Notes: the first of Acme's two example apps.
import ExampleKit

ExampleApp(id: "com.acme.notes", name: "Acme Notes", accent: 0x1F6FEB).run()
