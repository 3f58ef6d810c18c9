"""Text in many scripts, for checking the remote token estimate against a real tokenizer.

Each sample is ordinary prose (or code) of the kind a workspace holds, a few hundred characters
long, so the per-script rates of :mod:`imprint_desktop.core.providers.estimate` are checked on text
like the text they will meet: words, numbers, punctuation and line breaks together.
"""

from __future__ import annotations

SAMPLES: dict[str, str] = {
    "english": (
        "The lighthouse at Greyness Point was first lit on 1 November 1871. Its keeper, Ada "
        "Quill, kept a logbook of every fog day: in 1968 alone she recorded 212 of them, and the "
        "diaphone sounded two blasts every minute until the weather cleared. When the light was "
        "automated in 1971 she moved to the village, where she wrote a short history of the "
        "station, its lamps (paraffin until 1926, then electric) and the ships it warned.\n\n"
        "Sources disagree about the height of the tower; the survey of 1902 gives 31 m."
    ),
    "german": (
        "Der Leuchtturm am Greyness Point wurde am 1. November 1871 erstmals entzündet. Seine "
        "Wärterin Ada Quill führte ein Logbuch über jeden Nebeltag: Allein 1968 verzeichnete sie "
        "212 davon, und das Nebelhorn gab jede Minute zwei Signale, bis sich das Wetter "
        "aufklärte. Als die Anlage 1971 automatisiert wurde, zog sie ins Dorf, wo sie eine kurze "
        "Geschichte der Station schrieb – über die Lampen (bis 1926 Petroleum, danach "
        "elektrisch) und die Schiffe, die sie gewarnt hatte. Die Quellen widersprechen sich "
        "über die Höhe des Turms; die Vermessung von 1902 nennt 31 Meter."
    ),
    "french": (
        "Le phare de Greyness Point fut allumé pour la première fois le 1er novembre 1871. Sa "
        "gardienne, Ada Quill, tenait un registre de chaque jour de brouillard : en 1968, elle "
        "en nota 212, et la corne de brume retentissait deux fois par minute jusqu'à ce que le "
        "temps s'éclaircisse. Quand le phare fut automatisé en 1971, elle s'installa au village "
        "et écrivit une brève histoire de la station, de ses lampes et des navires qu'elle "
        "avait prévenus."
    ),
    "spanish": (
        "El faro de Greyness Point se encendió por primera vez el 1 de noviembre de 1871. Su "
        "guardiana, Ada Quill, llevaba un cuaderno de bitácora de cada día de niebla: solo en "
        "1968 anotó 212, y la sirena sonaba dos veces por minuto hasta que el tiempo aclaraba. "
        "Cuando el faro se automatizó en 1971, se mudó al pueblo y escribió una breve historia "
        "de la estación, de sus lámparas y de los barcos a los que había advertido."
    ),
    "dutch": (
        "De vuurtoren op Greyness Point werd op 1 november 1871 voor het eerst ontstoken. De "
        "vuurtorenwachter, Ada Quill, hield een logboek bij van elke mistige dag: alleen al in "
        "1968 noteerde zij er 212, en de misthoorn klonk elke minuut twee keer totdat het weer "
        "opklaarde. Toen de vuurtoren in 1971 werd geautomatiseerd, verhuisde zij naar het dorp, "
        "waar zij een korte geschiedenis schreef van het station en de schepen die zij had "
        "gewaarschuwd."
    ),
    "polish": (
        "Latarnię morską na przylądku Greyness zapalono po raz pierwszy 1 listopada 1871 roku. "
        "Jej latarniczka, Ada Quill, prowadziła dziennik każdego mglistego dnia: w samym 1968 "
        "roku zapisała ich 212, a syrena mgłowa odzywała się dwa razy na minutę, dopóki pogoda "
        "się nie poprawiła. Gdy latarnię zautomatyzowano w 1971 roku, przeprowadziła się do wsi."
    ),
    "vietnamese": (
        "Ngọn hải đăng ở mũi Greyness được thắp sáng lần đầu vào ngày 1 tháng 11 năm 1871. Người "
        "gác đèn, bà Ada Quill, ghi nhật ký mọi ngày có sương mù: riêng năm 1968 bà đã ghi lại "
        "212 ngày, và còi sương mù vang lên hai lần mỗi phút cho đến khi trời quang."
    ),
    "turkish": (
        "Greyness Burnu'ndaki deniz feneri ilk kez 1 Kasım 1871'de yakıldı. Fener bekçisi Ada "
        "Quill her sisli günü bir seyir defterine kaydetti: yalnızca 1968'de 212 gün saydı ve "
        "hava açılana kadar sis düdüğü her dakika iki kez çaldı. Fener 1971'de otomatik hale "
        "getirilince köye taşındı."
    ),
    "russian": (
        "Маяк на мысе Грейнесс впервые зажгли 1 ноября 1871 года. Его смотритель Ада Квилл вела "
        "журнал всех туманных дней: только в 1968 году она записала 212 таких дней, и туманный "
        "горн подавал два сигнала каждую минуту, пока погода не прояснялась. Когда в 1971 году "
        "маяк автоматизировали, она переехала в деревню и написала краткую историю станции, её "
        "ламп (до 1926 года керосиновых, затем электрических) и кораблей, которые она "
        "предупреждала. Источники расходятся в оценке высоты башни."
    ),
    "greek": (
        "Ο φάρος στο ακρωτήριο Γκρέινες άναψε για πρώτη φορά την 1η Νοεμβρίου 1871. Η φύλακάς "
        "του, η Άντα Κουίλ, κρατούσε ημερολόγιο για κάθε μέρα ομίχλης: μόνο το 1968 κατέγραψε "
        "212, και η σειρήνα ομίχλης ηχούσε δύο φορές το λεπτό μέχρι να καθαρίσει ο καιρός. "
        "Όταν ο φάρος αυτοματοποιήθηκε το 1971, μετακόμισε στο χωριό, όπου έγραψε μια σύντομη "
        "ιστορία του σταθμού και των πλοίων που είχε προειδοποιήσει."
    ),
    "arabic": (
        "أُضيء المنار في رأس غرينيس لأول مرة في الأول من نوفمبر عام 1871. وكانت حارسته آدا كويل "
        "تدوّن في سجلها كل يوم ضباب: ففي عام 1968 وحده سجّلت 212 يومًا، وكان بوق الضباب يطلق "
        "إشارتين كل دقيقة حتى يصفو الجو. وعندما أصبح المنار آليًا عام 1971 انتقلت إلى القرية "
        "وكتبت تاريخًا موجزًا للمحطة ومصابيحها والسفن التي حذّرتها."
    ),
    "hebrew": (
        "המגדלור בכף גריינס הודלק לראשונה ב־1 בנובמבר 1871. השומרת שלו, עדה קוויל, ניהלה יומן "
        "של כל יום ערפל: בשנת 1968 לבדה רשמה 212 ימים כאלה, וצופר הערפל השמיע שני אותות בכל "
        "דקה עד שמזג האוויר התבהר. כאשר המגדלור עבר לפעולה אוטומטית ב־1971 היא עברה לכפר "
        "וכתבה היסטוריה קצרה של התחנה."
    ),
    "hindi": (
        "ग्रेनेस पॉइंट का प्रकाशस्तंभ पहली बार 1 नवंबर 1871 को जलाया गया था। इसकी रखवाली करने "
        "वाली एडा क्विल हर कोहरे वाले दिन का लेखा रखती थीं: केवल 1968 में उन्होंने ऐसे 212 दिन "
        "दर्ज किए, और मौसम साफ़ होने तक कोहरे का भोंपू हर मिनट दो बार बजता था।"
    ),
    "thai": (
        "ประภาคารที่แหลมเกรย์เนสถูกจุดไฟครั้งแรกเมื่อวันที่ 1 พฤศจิกายน 1871 "
        "ผู้ดูแลคือเอดา ควิลล์ ซึ่งจดบันทึกทุกวันที่มีหมอก ในปี 1968 เพียงปีเดียวเธอบันทึกไว้ 212 วัน "
        "และแตรหมอกดังสองครั้งทุกนาทีจนกว่าอากาศจะแจ่มใส"
    ),
    "chinese": (
        "格雷内斯角灯塔于1871年11月1日首次点亮。灯塔看守人艾达·奎尔记录了每一个雾天："
        "仅在1968年，她就记下了212个雾天，雾号每分钟鸣响两次，直到天气转晴。1971年灯塔实现"
        "自动化后，她搬到了村里，写下了这座灯站的简史，记述了它的灯具（1926年以前使用煤油，"
        "此后改用电力）以及它曾警示过的船只。关于灯塔的高度，各种资料说法不一；1902年的测量"
        "记录为31米。"
    ),
    "japanese": (
        "グレイネス岬の灯台は1871年11月1日に初めて点灯された。灯台守のエイダ・クイルは霧の日を"
        "すべて日誌に記録した。1968年だけで212日を数え、天候が回復するまで霧笛は毎分二回鳴った。"
        "1971年に灯台が自動化されると、彼女は村へ移り、灯台の歴史、ランプ（1926年までは灯油、"
        "その後は電気）、そして警告した船について短い記録を書いた。"
    ),
    "korean": (
        "그레이니스 곶의 등대는 1871년 11월 1일에 처음 불을 밝혔다. 등대지기 에이다 퀼은 안개가 "
        "낀 모든 날을 일지에 기록했다. 1968년 한 해에만 212일을 기록했고, 날씨가 갤 때까지 무적은 "
        "매분 두 번씩 울렸다. 1971년 등대가 자동화되자 그녀는 마을로 이사하여 등대의 짧은 "
        "역사를 썼다."
    ),
    "emoji": (
        "Fog days 🌫️🌫️🌫️ logged: 212 📓✍️ — the horn 📯📯 every minute ⏱️. Lamp 🪔 → 💡 in "
        "1926. Ships warned 🚢⛴️🛳️⚓ and the keeper 👩‍✈️ moved to the village 🏘️🏡. Ratings: "
        "⭐⭐⭐⭐☆ 👍👍🎉🎉🔥 😀😃😄😁😆🥹😅😂🤣🥲 🇬🇧🇫🇷🇩🇪🇯🇵 👨‍👩‍👧‍👦 🧑🏽‍🔬"
    ),
    "code": (
        "def fog_days(log: list[dict[str, str]], year: int) -> int:\n"
        '    """Count the days of ``year`` whose entry mentions fog."""\n'
        "    count = 0\n"
        "    for entry in log:\n"
        '        if entry["date"].startswith(f"{year}-") and "fog" in entry["text"].lower():\n'
        "            count += 1\n"
        "    return count\n\n\n"
        "if __name__ == '__main__':\n"
        "    import json, sys\n"
        "    entries = json.load(open(sys.argv[1], encoding='utf-8'))\n"
        "    print(fog_days(entries, int(sys.argv[2])))  # e.g. 212 for 1968\n"
    ),
    "json": (
        '{"path": "notes/keepers.md", "lines": [12, 31], "score": 0.8731, "title": "Keepers", '
        '"text": "The last keeper of Greyness Point was Ada Quill, who left in 1971.\\n\\nHer '
        'logbook recorded 212 fog days in 1968."}, {"path": "signals/diaphone.md", "lines": '
        '[1, 9], "score": 0.5102, "text": "The diaphone sounded two blasts every minute."}'
    ),
    "table": (
        "| Region | Q1 | Q2 | Q3 | Q4 |\n|---|---:|---:|---:|---:|\n"
        "| North | 1,200 | 1,350 | 1,410 | 1,520 |\n| South | 980 | 1,020 | 1,105 | 1,230 |\n"
        "| East | 1,045 | 990 | 1,130 | 1,210 |\n\n"
        "Region: North; Q1: 1200; Q2: 1350; Q3: 1410; Q4: 1520\n"
        "Region: South; Q1: 980; Q2: 1020; Q3: 1105; Q4: 1230\n"
        "Keeper | Station | Years | Fog days\nAda Quill | Greyness Point | 1941–1971 | 212\n"
    ),
    "numbers": (
        "2024-03-01 12:00:07 1968 212 31.5 0x1F 3.14159 1,024 -273.15 +44 20 7946 0000 "
        "192.168.0.1 10:45 1871/11/01 99.9% 5e-3 42 17 8 256 65536 4096 2048 1024 512"
    ),
}
