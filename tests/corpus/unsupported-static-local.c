// expect: 4:17 static
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  static double s = 0.0;
  B[0] = s;
}
