// OfflineApp.tsx — App.tsx, offline first: the filter tip shows from the stored state at start (a note says when it
// may be out of date), and the search screen's donation, the tip's action and its dismissal are kept through airplane
// mode and sent when the network is back. Eligibility is never computed on the phone: a donation made offline that
// makes the tip displayable shows it once the node has it.
import { useEffect } from "react";
import { Button, Text, View } from "react-native";
import type { TipsClient } from "@tipsd/client";
import { useOfflineTip, useOfflineTipsClient } from "./offline";

function FilterTip({ tips }: { tips: TipsClient }) {
  const { visible, stale, title } = useOfflineTip(tips, "filter.tip");
  if (!visible) return null;
  return (
    <View accessibilityRole="alert">
      <Text>{title ?? "You can narrow this down"}</Text>
      {stale ? <Text>Offline: shown as last synced</Text> : null}
      <Button title="Learn more" onPress={() => void tips.performAction("filter.tip", "learn-more")} />
      <Button title="Close" onPress={() => void tips.invalidate("filter.tip", "tipClosed")} />
    </View>
  );
}

function SearchScreen({ tips }: { tips: TipsClient }) {
  useEffect(() => {
    // Offline, this resolves once the donation is stored; it is sent when the network is back.
    void tips.donate("search.opened");
  }, [tips]);
  return (
    <View>
      <FilterTip tips={tips} />
      <Text>Results</Text>
    </View>
  );
}

export default function OfflineApp() {
  const tips = useOfflineTipsClient();
  if (!tips) return <Text>Sign in to see your tips.</Text>;
  return <SearchScreen tips={tips} />;
}
