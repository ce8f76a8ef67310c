/// The service's interfaces as introspection XML: the same text as
/// packaging/dbus/io.github.quarantine.Analysis1.xml (installed under
/// /usr/share/dbus-1/interfaces/), which the end-to-end tests compare with what `Introspect` answers.
enum AnalysisBusInterface {
    static let analysis = """
  <interface name="io.github.quarantine.Analysis1">
    <property name="AnalysisPolicy" type="s" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="true"/>
    </property>
    <method name="AnalyzeImage">
      <arg name="picture" type="h" direction="in"/>
      <arg name="sensitive" type="b" direction="out"/>
      <arg name="reasons" type="as" direction="out"/>
      <arg name="boxes" type="a(sddddd)" direction="out"/>
      <arg name="elapsed_ms" type="d" direction="out"/>
    </method>
    <method name="AnalyzeVideo">
      <arg name="video" type="h" direction="in"/>
      <arg name="job" type="o" direction="out"/>
    </method>
    <method name="BeginStream">
      <arg name="participant" type="s" direction="in"/>
      <arg name="direction" type="s" direction="in"/>
      <arg name="stream" type="o" direction="out"/>
    </method>
  </interface>
"""

    static let videoJob = """
  <interface name="io.github.quarantine.Analysis1.VideoJob">
    <property name="State" type="s" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="true"/>
    </property>
    <property name="Progress" type="(da(dd)d)" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="true"/>
    </property>
    <property name="Result" type="(bda(dd)as)" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="true"/>
    </property>
    <method name="Cancel"/>
    <signal name="Progress">
      <arg name="fraction" type="d"/>
      <arg name="covered" type="a(dd)"/>
      <arg name="media_time" type="d"/>
    </signal>
    <signal name="Finished">
      <arg name="sensitive" type="b"/>
      <arg name="flagged_time" type="d"/>
      <arg name="flagged_ranges" type="a(dd)"/>
      <arg name="reasons" type="as"/>
    </signal>
    <signal name="Failed">
      <arg name="code" type="s"/>
      <arg name="message" type="s"/>
    </signal>
  </interface>
"""

    static let stream = """
  <interface name="io.github.quarantine.Analysis1.Stream">
    <property name="Participant" type="s" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="const"/>
    </property>
    <property name="Direction" type="s" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="const"/>
    </property>
    <property name="AnalysisPolicy" type="s" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="const"/>
    </property>
    <property name="ShouldIndicateSensitivity" type="b" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="true"/>
    </property>
    <property name="ShouldInterruptVideo" type="b" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="true"/>
    </property>
    <property name="ShouldMuteAudio" type="b" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="true"/>
    </property>
    <property name="FramesSeen" type="t" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="false"/>
    </property>
    <property name="FramesJudged" type="t" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="false"/>
    </property>
    <property name="FramesDropped" type="t" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="false"/>
    </property>
    <property name="FramesFailed" type="t" access="read">
      <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="false"/>
    </property>
    <method name="AnalyzeFrame">
      <arg name="frame" type="h" direction="in"/>
    </method>
    <method name="AnalyzeRawFrame">
      <arg name="frame" type="h" direction="in"/>
      <arg name="width" type="u" direction="in"/>
      <arg name="height" type="u" direction="in"/>
      <arg name="pixel_format" type="s" direction="in"/>
    </method>
    <method name="AnalyzeRawFrames">
      <arg name="frames" type="h" direction="in"/>
      <arg name="width" type="u" direction="in"/>
      <arg name="height" type="u" direction="in"/>
      <arg name="pixel_format" type="s" direction="in"/>
    </method>
    <method name="ContinueStream"/>
    <method name="End"/>
    <signal name="AnalysisChanged">
      <arg name="should_indicate_sensitivity" type="b"/>
      <arg name="should_interrupt_video" type="b"/>
      <arg name="should_mute_audio" type="b"/>
    </signal>
    <signal name="RawFramesEnded">
      <arg name="frames" type="t"/>
      <arg name="reason" type="s"/>
    </signal>
  </interface>
"""

    /// What every object also answers: introspection and properties.
    static let standard = """
      <interface name="org.freedesktop.DBus.Introspectable">
        <method name="Introspect">
          <arg name="xml_data" type="s" direction="out"/>
        </method>
      </interface>
      <interface name="org.freedesktop.DBus.Properties">
        <method name="Get">
          <arg name="interface_name" type="s" direction="in"/>
          <arg name="property_name" type="s" direction="in"/>
          <arg name="value" type="v" direction="out"/>
        </method>
        <method name="GetAll">
          <arg name="interface_name" type="s" direction="in"/>
          <arg name="properties" type="a{sv}" direction="out"/>
        </method>
        <method name="Set">
          <arg name="interface_name" type="s" direction="in"/>
          <arg name="property_name" type="s" direction="in"/>
          <arg name="value" type="v" direction="in"/>
        </method>
        <signal name="PropertiesChanged">
          <arg name="interface_name" type="s"/>
          <arg name="changed_properties" type="a{sv}"/>
          <arg name="invalidated_properties" type="as"/>
        </signal>
      </interface>

    """

    /// The `Introspect` answer for an object with `interface` (and `children`, node names below it).
    static func document(_ interface: String, children: [String] = []) -> String {
        """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
        \(interface)\(standard)\(children.map { "  <node name=\"\($0)\"/>\n" }.joined())</node>

        """
    }
}
