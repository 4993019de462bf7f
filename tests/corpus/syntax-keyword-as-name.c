// expect: 4:3 syntax
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  double for = 1.0;
  B[0] = for;
}
