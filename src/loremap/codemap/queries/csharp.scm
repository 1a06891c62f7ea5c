; C# tags. Captures: @name.definition.<kind>, @name.reference.<kind>, @import.

; ---- definitions
[
  (class_declaration name: (identifier) @name.definition.class)
  (record_declaration name: (identifier) @name.definition.class)
]

(struct_declaration
  name: (identifier) @name.definition.struct)

(interface_declaration
  name: (identifier) @name.definition.interface)

(enum_declaration
  name: (identifier) @name.definition.enum)

(delegate_declaration
  name: (identifier) @name.definition.type)

(method_declaration
  name: (identifier) @name.definition.method)

[
  (namespace_declaration name: (_) @name.definition.module)
  (file_scoped_namespace_declaration name: (_) @name.definition.module)
]

(field_declaration
  (modifier) @_const
  (variable_declaration
    (variable_declarator name: (identifier) @name.definition.constant))
  (#eq? @_const "const"))

; ---- references
(invocation_expression
  function: [
    (identifier) @name.reference.call
    (member_access_expression name: (identifier) @name.reference.call)
    (generic_name (identifier) @name.reference.call)
    (member_access_expression name: (generic_name (identifier) @name.reference.call))
  ])

(object_creation_expression
  type: [
    (identifier) @name.reference.class
    (generic_name (identifier) @name.reference.class)
    (qualified_name name: (identifier) @name.reference.class)
  ])

(base_list
  [
    (identifier) @name.reference.class
    (generic_name (identifier) @name.reference.class)
    (qualified_name name: (identifier) @name.reference.class)
  ])

[
  (variable_declaration
    type: [
      (identifier) @name.reference.type
      (generic_name (identifier) @name.reference.type)
      (qualified_name
        name: [(identifier) @name.reference.type (generic_name (identifier) @name.reference.type)])
    ])
  (parameter
    type: [
      (identifier) @name.reference.type
      (generic_name (identifier) @name.reference.type)
      (qualified_name
        name: [(identifier) @name.reference.type (generic_name (identifier) @name.reference.type)])
    ])
  (property_declaration
    type: [
      (identifier) @name.reference.type
      (generic_name (identifier) @name.reference.type)
      (qualified_name
        name: [(identifier) @name.reference.type (generic_name (identifier) @name.reference.type)])
    ])
  (method_declaration
    returns: [
      (identifier) @name.reference.type
      (generic_name (identifier) @name.reference.type)
      (qualified_name
        name: [(identifier) @name.reference.type (generic_name (identifier) @name.reference.type)])
    ])
  (type_argument_list
    [
      (identifier) @name.reference.type
      (generic_name (identifier) @name.reference.type)
      (qualified_name
        name: [(identifier) @name.reference.type (generic_name (identifier) @name.reference.type)])
    ])
  (attribute
    name: [
      (identifier) @name.reference.type
      (qualified_name name: (identifier) @name.reference.type)
    ])
]

; ---- imports: the namespace or type of a using directive (aliases drop the alias)
(using_directive
  !name
  [(identifier) (qualified_name)] @import)

(using_directive
  name: (_)
  (qualified_name) @import)
