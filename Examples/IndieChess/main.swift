import ExampleKit
