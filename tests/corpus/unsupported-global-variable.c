// expect: 3:8 global
// options: --size N=8
double g = 2.0;
void f(int N, double A[N], double B[N]) {
  B[0] = A[0];
}
